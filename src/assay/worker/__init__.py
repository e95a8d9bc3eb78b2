"""The generic worker: one request in, exactly one terminal record out, for any response type,
and the one `judge` that decides a record's outcome in `assay run` and `assay revalidate`."""

from assay.worker.execute import execute
from assay.worker.judge import judge

__all__ = ["execute", "judge"]
