"""Reports written by earlier versions of assay load, render and compare as they did (issue 24:
the run config is echoed typed, and report.json stays `assay.report/1`).

`stored_runs/<commit>/` holds report.json and records.jsonl of a run made with the code at that
commit, and what that code rendered from them (expected.html, the plotly bundle replaced by
`<plotly.js>`; expected.txt, the console summary at 100 columns):

- 6364a6d, the last commit before the run's vocabulary moved to `assay.spec`: a sweep against
  the embedded mock with a secret and a plain header, an SLO and injected HTTP 500s;
- ba9a089, before the `--stop-error-rate` stop had its own name: its constraints say
  `max_error_rate`, `api_key_env` is "OPENAI_API_KEY", and later keys (`degraded`,
  `secret_headers`, `max_not_sent_rate`, ...) are absent.
"""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from assay.benchmark.revalidate import revalidate
from assay.reports import Report, load_report, render_summary
from assay.reports.compare import workload_differences
from assay.reports.html import plotly_js, read_latency_samples, render_html
from assay.spec.endpoint import Endpoint
from assay.spec.target import MASK

STORED = Path(__file__).parent / "stored_runs"
RUNS = ("6364a6d", "ba9a089")


def _written(run: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((STORED / run / "report.json").read_text())
    return loaded


def _summary(report: Report) -> str:
    console = Console(
        file=io.StringIO(), width=100, force_terminal=False, color_system=None, record=True
    )
    render_summary(report, console)
    return console.export_text()


@pytest.mark.parametrize("run", RUNS)
def test_an_earlier_report_loads_and_renders_as_it_did(run: str) -> None:
    run_dir = STORED / run
    report = load_report(run_dir)
    page = render_html(report, read_latency_samples(run_dir / "records.jsonl"))
    assert page.replace(plotly_js(), "<plotly.js>") == (run_dir / "expected.html").read_text()
    assert _summary(report) == (run_dir / "expected.txt").read_text()


@pytest.mark.parametrize("run", RUNS)
def test_an_earlier_run_config_is_written_back_as_it_was_read(run: str) -> None:
    report = load_report(STORED / run)
    again = json.loads(report.model_dump_json())["run_config"]
    assert again == _written(run)["run_config"]
    assert list(again) == list(_written(run)["run_config"])  # in the same order, too


def _added_since(again: Any, written: Any, added: list[object]) -> Any:
    """`again` without the keys `written` lacks: fields added since, whose values go to `added`."""
    if isinstance(again, dict) and isinstance(written, dict):
        added.extend(value for key, value in again.items() if key not in written)
        return {
            key: _added_since(value, written[key], added)
            for key, value in again.items()
            if key in written
        }
    if isinstance(again, list) and isinstance(written, list) and len(again) == len(written):
        return [_added_since(a, w, added) for a, w in zip(again, written, strict=True)]
    return again


def test_a_report_of_the_previous_version_is_written_back_whole() -> None:
    report = load_report(STORED / "6364a6d")
    added: list[object] = []
    kept = _added_since(json.loads(report.model_dump_json()), _written("6364a6d"), added)
    assert kept == _written("6364a6d")
    # Fields added to `assay.report/1` since are written as not measured.
    assert added
    assert all(value is None for value in added)


def test_an_earlier_run_config_reads_typed() -> None:
    echo = load_report(STORED / "6364a6d").run_config
    assert echo.endpoint is Endpoint.chat
    assert echo.profile == "sweep"
    assert echo.headers == {"X-Api-Key": MASK, "X-Team": "infra"}
    assert echo.slo == {"ttft_ms": 500.0}
    assert echo["processes"] == 1
    assert echo.concurrency == 64
    assert echo.constraints is not None
    assert echo.constraints.max_requests == 8
    assert echo.interrupted is False
    assert echo.degraded is False
    assert echo["headers"] == {"X-Api-Key": MASK, "X-Team": "infra"}  # the dict-era read


def test_keys_an_older_report_lacks_read_as_their_defaults() -> None:
    echo = load_report(STORED / "ba9a089").run_config
    assert "degraded" not in _written("ba9a089")["run_config"]
    assert echo.degraded is False
    assert echo.max_not_sent_rate == 0.05
    assert echo.secret_headers == ()
    assert vars(echo)["api_key_env"] == "OPENAI_API_KEY"
    # The stop's old name is kept under that name; the new one is not made up.
    assert echo.constraints is not None
    assert echo.constraints.stop_error_rate is None
    assert echo.constraints.model_extra == {"max_error_rate": 0.5}
    with pytest.raises(KeyError):
        echo["degraded"]


def test_a_value_the_current_rules_refuse_and_an_unknown_key_still_load(tmp_path: Path) -> None:
    written = _written("6364a6d")
    written["run_config"].update(
        {
            "headers": {"X Team": "infra"},  # a name checked only since
            "max_seconds": 1e12,  # beyond today's 30-day limit
            "warmup_seconds": None,  # an infinite value, as JSON wrote it
            "written_by_a_later_assay": [1, 2],
        }
    )
    written["run_config"]["constraints"]["max_errors"] = "many"
    (tmp_path / "report.json").write_text(json.dumps(written))
    echo = load_report(tmp_path).run_config
    assert echo.headers == {}
    assert vars(echo)["max_seconds"] is None  # typed: a derived field
    assert vars(echo)["warmup_seconds"] == 0.0
    assert echo.model_extra == {"written_by_a_later_assay": [1, 2]}
    assert echo.constraints is not None
    assert echo.constraints.max_errors is None
    assert json.loads(echo.model_dump_json()) == written["run_config"]


def test_two_stored_runs_compare_on_their_typed_workload() -> None:
    reports = [load_report(STORED / run) for run in RUNS]
    assert workload_differences(reports) == ["profile: 'sweep' (run 1) vs 'constant' (run 2)"]


@pytest.mark.parametrize("run", RUNS)
def test_an_earlier_run_revalidates_and_keeps_its_config(run: str, tmp_path: Path) -> None:
    run_dir = tmp_path / run
    shutil.copytree(STORED / run, run_dir)
    outcome = revalidate(run_dir, strict=True, max_error_rate=0.5)
    before = _written(run)["run_config"]
    after = json.loads((outcome.output_dir / "report.json").read_text())["run_config"]
    assert after.pop("revalidated_at")
    assert after.pop("validator_chain") != before.pop("validator_chain")
    assert (after.pop("max_error_rate"), before.pop("max_error_rate")) == (0.5, 0.05)
    assert after == before
