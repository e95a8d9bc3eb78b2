"""Reading a stored run back: report.json as the typed `Report`, with one clear error when the
file is missing or is not an assay report."""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import ValidationError

from assay.errors import DataError
from assay.reports.report import Report
from assay.run_folder import REPORT_FILE


def load_report(path: Path) -> Report:
    """The report of a run directory (or of a report.json file itself).

    Raises `DataError` when the file cannot be read or does not match `assay.report/1`.

    >>> import tempfile, pathlib
    >>> load_report(pathlib.Path(tempfile.mkdtemp()))
    Traceback (most recent call last):
    ...
    assay.errors.DataError: ...report.json: no such file (not a run directory?)
    """
    file = path / REPORT_FILE if path.is_dir() else path
    try:
        raw = file.read_bytes()
    except FileNotFoundError:
        raise DataError(f"{file}: no such file (not a run directory?)") from None
    except OSError as error:
        raise DataError(f"cannot read {file}: {error.strerror or error}") from None
    try:
        report = Report.model_validate_json(raw)
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "the top level"
        raise DataError(
            f"{file} is not an assay report ({error.error_count()} problem(s); "
            f"first at {where}: {first['msg']})"
        ) from None
    try:
        # A count beyond 64 bits (-10^30) validates as an int and breaks every JSON writer.
        json.loads(raw, parse_int=_int64)
    except ValueError as error:
        raise DataError(f"{file} is not an assay report ({error})") from None
    return report


def _int64(text: str) -> int:
    value = int(text)
    if not -(1 << 63) <= value < 1 << 63:
        raise ValueError(f"the number {text[:24]} is beyond 64 bits")
    return value
