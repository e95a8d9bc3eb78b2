"""What this machine lets a run's processes use, asked of the system where the run starts."""

from __future__ import annotations

import os


def usable_cpus() -> int:
    """The CPUs this process may run on (its affinity, which containers narrow), at least 1.

    >>> usable_cpus() >= 1
    True
    """
    try:
        return len(os.sched_getaffinity(0)) or 1
    except AttributeError:  # not on every platform (macOS)
        return os.cpu_count() or 1


__all__ = ["usable_cpus"]
