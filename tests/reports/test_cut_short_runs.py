"""Runs that did not run to their end (interrupted by Ctrl-C or SIGTERM, or killed) are never
valid and are named so wherever they are shown or compared; and a page `assay compare --html`
or `assay report` cannot write is one `error:` line, exit 2, with nothing partial left."""

from __future__ import annotations

import json
import shutil
from datetime import UTC, datetime
from pathlib import Path

from assay.benchmark.revalidate import revalidate
from assay.file_writes import TEMP_SUFFIX
from assay.reports import Report, Validity, build_report, collect_environment, write_report
from assay.reports.compare import run_states, workload_differences
from assay.reports.html import render_html
from assay.reports.report import INTERRUPTED_REASON, Incomplete
from assay.spec.run import RunEcho
from tests.cli.cli_harness import run_assay
from tests.reports.test_compare import _report

NOW = datetime(2026, 12, 2, 9, 0, tzinfo=UTC)
STORED = Path(__file__).parent / "stored_runs"


def _interrupted(report: Report) -> Report:
    """`report` rebuilt as the report of the same run cut short by Ctrl-C."""
    return build_report(
        run_config=report.run_config.model_copy(update={"interrupted": True}),
        steps=report.steps,
        started_at=NOW,
        finished_at=NOW,
        max_error_rate=0.05,
        environment=collect_environment(include_hostname=False),
    )


def _killed(report: Report) -> Report:
    """`report`'s steps as `assay report` rebuilds them for a killed run: no settings kept."""
    steps = [step.model_copy(update={"profile": "unknown"}) for step in report.steps]
    return build_report(
        run_config=RunEcho(),
        steps=steps,
        started_at=NOW,
        finished_at=NOW,
        max_error_rate=0.05,
        environment=collect_environment(include_hostname=False),
        incomplete=Incomplete(state="unfinished", shards_merged=1, settings_known=False),
    )


def test_an_interrupted_run_is_not_valid_and_says_it_was_interrupted() -> None:
    whole = _report(400, 4.0, 50)
    assert whole.validity.valid  # the same figures without the interruption pass
    cut = _interrupted(whole)
    assert not cut.validity.valid
    assert cut.validity.reasons == (INTERRUPTED_REASON,)
    assert "interrupted" in INTERRUPTED_REASON
    assert "partial" in INTERRUPTED_REASON


def test_an_interrupted_runs_page_is_titled_interrupted_with_its_reason() -> None:
    page = render_html(_interrupted(_report(400, 4.0, 50)), {})
    assert "<title>assay report: INTERRUPTED</title>" in page
    assert "VALID (interrupted)" not in page
    assert f"<li>{INTERRUPTED_REASON}</li>" in page


def test_an_interrupted_report_written_as_valid_still_reads_as_interrupted() -> None:
    # A report written when an interrupted run could be VALID: it loads, and is not shown valid.
    cut = _interrupted(_report(400, 4.0, 50))
    earlier = cut.model_copy(update={"validity": Validity(valid=True)})
    assert Report.model_validate_json(earlier.model_dump_json()) == earlier
    page = render_html(earlier, {})
    assert "<title>assay report: INTERRUPTED</title>" in page
    assert '<span class="verdict invalid">INTERRUPTED RUN</span>' in page
    assert f"<li>{INTERRUPTED_REASON}</li>" in page


def test_an_interrupted_run_revalidated_is_still_not_valid(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    shutil.copytree(STORED / "ba9a089", run_dir)
    written = json.loads((run_dir / "report.json").read_text())
    written["run_config"]["interrupted"] = True
    written["validity"] = {"valid": True, "reasons": []}  # as earlier versions wrote it
    (run_dir / "report.json").write_text(json.dumps(written))
    outcome = revalidate(run_dir, max_error_rate=1.0)
    again = json.loads((outcome.output_dir / "report.json").read_text())
    assert again["validity"]["valid"] is False
    assert again["validity"]["reasons"][0] == INTERRUPTED_REASON


def test_a_killed_run_is_compared_without_settings_it_did_not_keep() -> None:
    constant = _report(400, 4.0, 50)
    killed = _killed(constant)
    # Its empty run_config reads as the defaults (profile throughput): never a difference.
    assert workload_differences([killed, constant]) == []
    assert workload_differences([constant, killed]) == []
    chat_again = _report(400, 4.0, 50, {"endpoint": "embeddings", "profile": "constant"})
    assert workload_differences([killed, constant, chat_again]) == [
        "endpoint: 'chat' (run 2) vs 'embeddings' (run 3)"
    ]
    assert run_states([constant, killed], ["a", "b"]) == [
        "run 2 (b) is UNFINISHED: partial results, no verdict; settings not kept (unfinished "
        "run), so its workload is not checked against the other runs'"
    ]


def test_compare_names_each_run_that_did_not_run_to_its_end(tmp_path: Path) -> None:
    whole = _report(400, 4.0, 50)
    write_report(whole, tmp_path / "whole")
    write_report(_killed(whole), tmp_path / "killed")
    write_report(_interrupted(whole), tmp_path / "cut")
    page = tmp_path / "compare.html"
    result = run_assay(
        "compare", tmp_path / "whole", tmp_path / "killed", tmp_path / "cut", "--html", page
    )
    assert result.exit_code == 0, result.stderr
    assert "profile" not in result.stdout + result.stderr  # no invented difference
    killed_line = "run 2 is UNFINISHED: partial results, no verdict; settings not kept"
    cut_line = "run 3 was INTERRUPTED: partial results of the part that ran, no verdict"
    assert f"warning: {killed_line}" in result.stdout
    assert f"warning: {cut_line}" in result.stdout
    text = page.read_text(encoding="utf-8")
    assert f"run 2 ({tmp_path / 'killed'}) is UNFINISHED" in text
    assert f"run 3 ({tmp_path / 'cut'}) was INTERRUPTED" in text


def test_compare_html_into_a_folder_or_a_missing_folder_is_one_error_line(
    tmp_path: Path,
) -> None:
    write_report(_report(10, 2.0, 50), tmp_path / "a")
    folder = tmp_path / "pages"
    folder.mkdir()
    for target, why in (
        (folder, "it is a folder (name a file)"),
        (tmp_path / "missing" / "c.html", f"its folder {tmp_path / 'missing'} does not exist"),
    ):
        result = run_assay("compare", tmp_path / "a", tmp_path / "a", "--html", target)
        assert result.exit_code == 2, result.stdout + result.stderr
        assert result.stderr == f"error: --html {target}: cannot be written: {why}\n"
    assert list(folder.iterdir()) == []
    assert not (tmp_path / "missing").exists()


def test_compare_html_that_fails_to_write_leaves_nothing_behind(tmp_path: Path) -> None:
    # /proc/self is a folder where no file can be created: the write itself fails.
    write_report(_report(10, 2.0, 50), tmp_path / "a")
    target = Path("/proc/self/compare.html")
    result = run_assay("compare", tmp_path / "a", tmp_path / "a", "--html", target)
    assert result.exit_code == 2, result.stdout + result.stderr
    assert result.stderr.startswith(f"error: --html {target}: cannot be written: ")
    assert result.stderr.count("\n") == 1
    assert "internal error" not in result.stderr


def test_report_whose_page_cannot_be_written_is_one_error_line(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    write_report(_report(10, 2.0, 50), run_dir)
    (run_dir / "report.html").mkdir()  # what holds the page's name is not a file
    result = run_assay("report", run_dir)
    assert result.exit_code == 2, result.stdout + result.stderr
    assert result.stderr == f"error: cannot write {run_dir / 'report.html'}: Is a directory\n"
    assert not [path for path in run_dir.iterdir() if path.name.endswith(TEMP_SUFFIX)]
