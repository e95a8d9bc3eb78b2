"""The committed JSON Schemas match the models, describe what runs write, and docs/report.md
names every field (issue 12, report schema)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from assay.core import DiagnosticCode, Evidence, UnusableResponse
from assay.records import Cancelled, Errored, JudgedBy, RequestRecord
from assay.records.jsonl import record_line
from assay.reports.schema import (
    RECORD_LINE,
    RECORD_SCHEMA_FILE,
    REPORT_SCHEMA_FILE,
    CancelledLine,
    CompletedLine,
    ErroredLine,
    main,
    record_schema,
    report_schema,
    schema_texts,
    stale_files,
)
from tests.cli.cli_harness import read_record_lines, read_report, run_fast

ROOT = Path(__file__).resolve().parents[2]
SCHEMA_DIR = ROOT / "docs" / "schema"
REPORT_DOC = ROOT / "docs" / "report.md"


def test_committed_schema_files_match_the_models() -> None:
    # Fails when a report or record model changes and `python -m assay.reports.schema` was not
    # run: the files in docs/schema/ are what users validate against.
    for name, text in schema_texts().items():
        assert (SCHEMA_DIR / name).read_text(encoding="utf-8") == text, (
            f"docs/schema/{name} is out of date: run python -m assay.reports.schema"
        )


def test_check_mode_reports_a_stale_file_and_writing_fixes_it(tmp_path: Path) -> None:
    assert main([str(tmp_path)]) == 0
    assert stale_files(tmp_path) == []
    (tmp_path / REPORT_SCHEMA_FILE).write_text("{}\n")
    assert stale_files(tmp_path) == [REPORT_SCHEMA_FILE]
    assert main(["--check", str(tmp_path)]) == 1
    assert main([str(tmp_path)]) == 0
    assert main(["--check", str(tmp_path)]) == 0


def test_report_schema_names_its_version() -> None:
    schema = report_schema()
    assert schema["$id"] == "assay.report/1"
    assert schema["properties"]["schema_version"]["const"] == "assay.report/1"


def _keys(variant: type[CompletedLine | ErroredLine | CancelledLine]) -> set[str]:
    return set(record_schema()["$defs"][variant.__name__]["properties"])


def test_each_record_line_has_exactly_the_keys_of_its_schema_variant() -> None:
    cancelled = RequestRecord[Any](
        request_id="c", targeted_start_ns=0, dispatched_ns=1, finished_ns=2, outcome=Cancelled()
    )
    errored = RequestRecord[Any](
        request_id="e",
        targeted_start_ns=0,
        dispatched_ns=1,
        finished_ns=2,
        outcome=Errored(
            diagnostic=UnusableResponse(
                code=DiagnosticCode.http_status,
                message="HTTP 503",
                evidence=Evidence(http_status=503, excerpt="busy"),
            ),
            judged_by=JudgedBy.transport,
        ),
    )
    session_turn = cancelled.model_copy(update={"turn": 2})
    for record, variant in (
        (cancelled, CancelledLine),
        (errored, ErroredLine),
        (session_turn, CancelledLine),
    ):
        line = record_line(record)
        assert isinstance(RECORD_LINE.validate_python(line), variant)
        assert set(line) <= _keys(variant)


def test_a_real_run_writes_files_the_schemas_describe(tmp_path: Path) -> None:
    # Completed, errored (with and without a partial answer) and cancelled requests: the mock
    # answers slowly, so the time limit cancels the requests in flight.
    result = run_fast(
        tmp_path, "--mock-ttft-ms", "150", "--mock-fault", "truncated_stream=0.2",
        "--mock-fault", "http_500=0.2", "--profile", "concurrent", "--concurrency", "8",
        "--max-seconds", "1", "--processes", "1",
    )  # fmt: skip
    assert result.exit_code in (0, 1), result.stderr
    read_report(tmp_path)  # report.json validates against the model the schema comes from
    seen: set[str] = set()
    for line in read_record_lines(tmp_path):
        parsed = RECORD_LINE.validate_python(line)
        seen.add(parsed.status)
        assert set(line) <= _keys(type(parsed))
    assert seen == {"completed", "errored", "cancelled"}


def _property_names(schema: dict[str, Any]) -> set[str]:
    names: set[str] = set()

    def walk(node: object) -> None:
        if isinstance(node, dict):
            properties = node.get("properties")
            if isinstance(properties, dict):
                names.update(properties)
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(schema)
    return names


def test_report_doc_describes_every_field_of_both_schemas() -> None:
    doc = REPORT_DOC.read_text(encoding="utf-8")
    described = set(re.findall(r"`([a-z0-9_]+)`", doc))
    missing = (_property_names(report_schema()) | _property_names(record_schema())) - described
    assert not missing, f"docs/report.md does not describe: {sorted(missing)}"


def test_schema_files_are_named_as_documented() -> None:
    doc = REPORT_DOC.read_text(encoding="utf-8")
    assert f"docs/schema/{REPORT_SCHEMA_FILE}" in doc
    assert f"docs/schema/{RECORD_SCHEMA_FILE}" in doc
