"""Support for testing code built on assay: a fake clock that never sleeps on the wall clock."""

from assay.testing.clock import FakeClock

__all__ = ["FakeClock"]
