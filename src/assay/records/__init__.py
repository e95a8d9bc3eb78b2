"""Per-request records: exactly one terminal outcome for every dispatched request."""

from assay.records.record import Cancelled, Completed, Errored, RequestRecord

__all__ = ["Cancelled", "Completed", "Errored", "RequestRecord"]
