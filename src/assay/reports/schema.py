"""The JSON Schemas of report.json and of one records.jsonl line, generated from the models.

`python -m assay.reports.schema [DIR]` writes them (default `docs/schema/`); with `--check` it
only compares and exits 1 when a committed file is out of date. A records.jsonl line is a flat
object (see `assay.records.jsonl.record_line`), so its model is declared here: one variant per
status, the response as the compiled `GenerationResponse` without `timing`, `usage` and `ids`,
which sit at the top level of the line.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, create_model

from assay.core.diagnostics import Stage
from assay.core.response import ExchangeIds, ResponseTiming, Usage, stored_fields
from assay.records import JudgedBy
from assay.reports.report import SCHEMA_VERSION, Report

REPORT_SCHEMA_FILE: Final = "report.schema.json"
RECORD_SCHEMA_FILE: Final = "record.schema.json"
DEFAULT_DIR: Final = Path("docs") / "schema"
_DRAFT: Final = "https://json-schema.org/draft/2020-12/schema"
_LINE_ELSEWHERE: Final = frozenset({"timing", "usage", "ids"})

# create_model's overloads cannot type field specs taken from another model's fields.
StoredResponse: type[BaseModel] = create_model(  # type: ignore[call-overload]
    "StoredResponse",
    __config__=ConfigDict(frozen=True, extra="forbid"),
    __doc__="A compiled answer as records.jsonl stores it: `timing`, `usage` and `ids` are on "
    "the line.",
    **{
        name: (field.annotation, field)
        for name, field in stored_fields().items()
        if name not in _LINE_ELSEWHERE
    },
)


_IDS: Final = (
    "the request id sent, the one the server echoed, the answer's own id and the traceparent "
    "sent; only when one of them was sent or received"
)


class _Line(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str = Field(description="assay's request id")
    step: int = Field(description="index of the profile step (0-based)")
    turn: int | None = Field(
        default=None, ge=1, description="the turn of a multi-turn session (from 1); only there"
    )
    model: str | None = Field(
        default=None, description="the model the request named; only when the run sends several"
    )
    targeted_start_ns: int = Field(description="when the schedule wanted it sent (monotonic ns)")
    dispatched_ns: int = Field(description="when it was sent (monotonic ns)")
    finished_ns: int = Field(description="when its outcome was known (monotonic ns)")


class CompletedLine(_Line):
    """A request the server answered and every validator accepted."""

    status: Literal["completed"]
    ids: ExchangeIds | None = Field(default=None, description=_IDS)
    timing: ResponseTiming
    usage: Usage | None
    response: StoredResponse


class ErroredLine(_Line):
    """A request with no usable answer; `code` says why, `response` holds any partial answer."""

    status: Literal["errored"]
    code: str = Field(description="a built-in diagnostic code, or a namespaced custom code")
    stage: Stage
    message: str
    judged_by: JudgedBy
    validator: str | None = Field(description="the validator's name when judged_by is validator")
    http_status: int | None
    excerpt: str | None
    traceback: str | None = Field(default=None, description="only for internal_error")
    ids: ExchangeIds | None = Field(default=None, description=_IDS)
    timing: ResponseTiming | None
    usage: Usage | None
    response: StoredResponse | None


class CancelledLine(_Line):
    """A request the run cut (a constraint, Ctrl-C) while it was in flight."""

    status: Literal["cancelled"]
    reason: str
    timing: None
    usage: None
    response: None


RecordLine = Annotated[CompletedLine | ErroredLine | CancelledLine, Field(discriminator="status")]
RECORD_LINE: Final[TypeAdapter[CompletedLine | ErroredLine | CancelledLine]] = TypeAdapter(
    RecordLine
)


def report_schema() -> dict[str, Any]:
    """The JSON Schema of report.json (what `Report.model_dump_json` writes)."""
    schema = Report.model_json_schema(mode="serialization")
    return {"$schema": _DRAFT, "$id": SCHEMA_VERSION, **schema}


def record_schema() -> dict[str, Any]:
    """The JSON Schema of one records.jsonl line."""
    schema = RECORD_LINE.json_schema(mode="serialization")
    return {"$schema": _DRAFT, "$id": "assay.record/1", "title": "RecordLine", **schema}


def schema_texts() -> dict[str, str]:
    """File name -> the text that file must hold (stable key order, trailing newline)."""
    return {
        REPORT_SCHEMA_FILE: json.dumps(report_schema(), indent=2, sort_keys=True) + "\n",
        RECORD_SCHEMA_FILE: json.dumps(record_schema(), indent=2, sort_keys=True) + "\n",
    }


def stale_files(directory: Path) -> list[str]:
    """The schema files in `directory` that are missing or differ from the models."""
    stale = []
    for name, text in schema_texts().items():
        path = directory / name
        if not path.is_file() or path.read_text(encoding="utf-8") != text:
            stale.append(name)
    return stale


def main(argv: Sequence[str]) -> int:
    """Write (or with `--check`, compare) the schema files; the exit code for the shell."""
    check = "--check" in argv
    paths = [arg for arg in argv if arg != "--check"]
    if len(paths) > 1 or any(arg.startswith("-") for arg in paths):
        print("usage: python -m assay.reports.schema [--check] [DIR]", file=sys.stderr)
        return 2
    directory = Path(paths[0]) if paths else DEFAULT_DIR
    if check:
        stale = stale_files(directory)
        for name in stale:
            print(f"{directory / name} is out of date: run python -m assay.reports.schema")
        return 1 if stale else 0
    directory.mkdir(parents=True, exist_ok=True)
    for name, text in schema_texts().items():
        (directory / name).write_text(text, encoding="utf-8")
        print(f"wrote {directory / name}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
