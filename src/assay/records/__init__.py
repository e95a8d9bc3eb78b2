"""Per-request records: exactly one terminal outcome for every dispatched request, and
records.jsonl, where they are written as they complete and read back."""

from assay.records.jsonl import RecordWriter, read_records, record_from_line, record_line
from assay.records.record import Cancelled, Completed, Errored, JudgedBy, RequestRecord

__all__ = [
    "Cancelled",
    "Completed",
    "Errored",
    "JudgedBy",
    "RecordWriter",
    "RequestRecord",
    "read_records",
    "record_from_line",
    "record_line",
]
