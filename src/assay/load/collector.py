"""The cyclic garbage collector, kept quiet while a step dispatches.

A load process allocates a few hundred container objects per request (parsed chunks, tasks,
records). With CPython's default thresholds the collector then runs every few requests, and each
time it reaches the oldest generation it walks every object the imports created (pydantic,
the plan): tens of milliseconds during which no timer fires, which is what the p99
dispatch lag measured. `quiet_collector` freezes what set-up built (`gc.freeze`: those objects
are never walked again while the step runs) and raises the first threshold, so the collections
left are rarer and walk only what the step itself keeps alive. On leaving, the process gets its
collector back as it was, so a library user's process is not changed by running a benchmark.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

# Young-generation threshold during a step (CPython's default is 700): a collection every
# ~20,000 net container allocations, about every hundred requests instead of every few.
STEP_THRESHOLD_0 = 20_000

# Process-wide, as the collector is: how many blocks are open, and what the first one changed.
_active = 0
_saved: tuple[int, int, int] | None = None
_froze = False


@contextmanager
def quiet_collector() -> Iterator[None]:
    """Freeze what exists and raise the young-generation threshold until the block ends.

    Nested and concurrent blocks (steps run side by side in one process) share one setting: the
    first to enter saves the collector's state and the last to leave restores it.

    >>> import gc
    >>> before = gc.get_threshold()
    >>> with quiet_collector():
    ...     gc.get_threshold()[0] == STEP_THRESHOLD_0, gc.get_freeze_count() > 0
    (True, True)
    >>> gc.get_threshold() == before, gc.get_freeze_count()
    (True, 0)
    """
    global _active, _saved, _froze
    if _active == 0:
        _saved = gc.get_threshold()
        # A process that froze objects itself keeps them frozen: unfreezing on leaving would
        # undo its own freeze, so this block then leaves freezing alone.
        _froze = gc.get_freeze_count() == 0
        if _froze:
            gc.freeze()
        gc.set_threshold(STEP_THRESHOLD_0, _saved[1], _saved[2])
    _active += 1
    try:
        yield
    finally:
        _active -= 1
        if _active == 0 and _saved is not None:
            gc.set_threshold(*_saved)
            if _froze:
                gc.unfreeze()
            _saved = None


def collector_on() -> None:
    """The garbage collector on again after a start-up that ran with it off (the command line,
    `assay.cli.app.main`; a load process's imports, `assay.engine.load_child`), with what the
    start-up built moved to the oldest generation without being walked.

    Start-up (imports, pydantic's schemas, typer's commands) leaves ~100,000 tracked objects
    that live as long as the process; built with the collector off, they are all in the
    youngest generation, and the first collections would walk them twice to promote them, to
    free nothing. Frozen and unfrozen at once (`gc.freeze`, `gc.unfreeze`: two list splices)
    they land in the oldest generation unwalked, and nothing stays frozen: a load step freezes
    them again cheaply (`quiet_collector`). A process that froze objects itself keeps them
    frozen; it only gets the collector back.
    """
    if gc.isenabled():
        return
    if gc.get_freeze_count() == 0:
        gc.freeze()
        gc.unfreeze()
    gc.enable()


__all__ = ["STEP_THRESHOLD_0", "collector_on", "quiet_collector"]
