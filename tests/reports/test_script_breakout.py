"""Text in chart data cannot end or hide the page's script (issue 21.6).

Only `</` was escaped in the JSON inlined into report.html and compare.html, so a step label or
a run folder named `<!--<script` kept the browser from closing the script element: no chart was
drawn and no error shown. Every `<`, `>`, `&`, U+2028 and U+2029 is escaped now.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Final

import orjson
import pytest

from assay.run_folder import HTML_FILE
from tests.cli.cli_harness import run_assay, run_fast
from tests.reports.browser import artifacts_dir, render

HOSTILE: Final = "<!--<script>x</script>&\u2028"


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("breakout") / "run"
    result = run_fast(folder, "--max-requests", "24", "--processes", "1", "--max-error-rate", "0.5")
    assert result.exit_code == 0, result.stdout + result.stderr
    return folder


def test_a_step_label_with_a_script_opener_leaves_every_chart_drawn(
    run_dir: Path, tmp_path: Path
) -> None:
    tampered = tmp_path / "tampered"
    shutil.copytree(run_dir, tampered)
    (tampered / HTML_FILE).unlink()
    report = orjson.loads((tampered / "report.json").read_bytes())
    for step in report["steps"]:
        step["profile"] = HOSTILE
    (tampered / "report.json").write_bytes(orjson.dumps(report))
    result = run_assay("report", tampered)
    assert result.exit_code == 0, result.stdout + result.stderr
    page = (tampered / HTML_FILE).read_text(encoding="utf-8")
    assert "<!--<script" not in page.split("const ASSAY_FIGURES", 1)[1]
    rendered = render(tampered / HTML_FILE, artifacts_dir() / "report-script-label.png")
    assert rendered.errors == ()
    assert len(rendered.charts) >= 5
    for chart in rendered.charts:
        assert chart.svg_width > 100, chart
        assert chart.traces > 0 or chart.annotations > 0, chart


def test_a_run_folder_named_with_a_script_opener_leaves_every_compare_chart_drawn(
    run_dir: Path, tmp_path: Path
) -> None:
    named = tmp_path / "b<!--<script>"
    shutil.copytree(run_dir, named)
    page = tmp_path / "compare.html"
    result = run_assay("compare", run_dir, named, "--html", page)
    assert result.exit_code == 0, result.stdout + result.stderr
    rendered = render(page, artifacts_dir() / "compare-script-label.png")
    assert rendered.errors == ()
    assert len(rendered.charts) >= 5
    for chart in rendered.charts:
        assert chart.svg_width > 100, chart
