"""The generic worker: one request in, exactly one terminal record out, for any response type;
the one `judge` that decides a record's outcome in `assay run` and `assay revalidate`; and
`judge_bytes`, the same verdict on an answer captured outside a run."""

from assay.worker.captured import judge_bytes
from assay.worker.execute import execute
from assay.worker.judge import judge

__all__ = ["execute", "judge", "judge_bytes"]
