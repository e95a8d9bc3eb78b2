"""`load_report`: the public typed reader of a stored run, with one clear error for bad input."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from assay.core import Endpoint
from assay.errors import DataError
from assay.metrics import StepAggregator
from assay.reports import StepReport, build_report, collect_environment, load_report, write_report
from assay.spec.run import RunEcho

NOW = datetime(2026, 12, 2, 9, 0, tzinfo=UTC)


def test_load_report_reads_a_run_directory_or_its_report_file(tmp_path: Path) -> None:
    report = build_report(
        run_config=RunEcho(endpoint=Endpoint.chat),
        steps=[StepReport.of(0, "synchronous", StepAggregator().snapshot())],
        started_at=NOW,
        finished_at=NOW,
        max_error_rate=0.05,
        environment=collect_environment(include_hostname=False),
    )
    json_path, _ = write_report(report, tmp_path)
    assert load_report(tmp_path) == report
    assert load_report(json_path) == report


def test_directory_without_a_report_is_a_data_error(tmp_path: Path) -> None:
    with pytest.raises(DataError, match=r"report\.json: no such file"):
        load_report(tmp_path)


def test_json_that_is_not_a_report_names_the_first_problem(tmp_path: Path) -> None:
    (tmp_path / "report.json").write_text('{"schema_version": "assay.report/9"}')
    with pytest.raises(DataError, match=r"is not an assay report .*schema_version"):
        load_report(tmp_path)
