"""The generic worker: one request in, exactly one terminal record out, for any response type."""

from assay.worker.execute import execute

__all__ = ["execute"]
