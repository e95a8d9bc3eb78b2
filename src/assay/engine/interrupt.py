"""Ctrl-C and SIGTERM as a flag: the parent polls it instead of a `KeyboardInterrupt` raised
anywhere, so a run stopped by `timeout`, systemd, Kubernetes or CI ends like one stopped by
Ctrl-C: in-flight requests cancelled and recorded, the partial report written."""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from typing import Final

STOP_SIGNALS: Final = (signal.SIGINT, signal.SIGTERM)
"""The signals that stop a run cleanly."""


class SigintFlag:
    """Set by SIGINT or SIGTERM; read with `is_set()`.

    >>> flag = SigintFlag()
    >>> flag.set()
    >>> flag.is_set()
    True
    """

    __slots__ = ("raised",)

    def __init__(self) -> None:
        self.raised = False

    def set(self, *_: object) -> None:
        self.raised = True

    def is_set(self) -> bool:
        # A method, not the attribute: the signal handler changes it behind the type checker.
        return self.raised


STOPPED_EARLY: Final = SigintFlag()
"""Set by `stop_raising` for every stop signal it turns into a `KeyboardInterrupt`: one raised
where Python cannot propagate it (code a C extension calls back, a finalizer) is printed as
"Exception ignored" and lost, and a run whose imports swallowed it would have run to its end.
`sigint_as_flag` starts set when it is."""


def stop_raising(signum: int, frame: object) -> None:
    """A stop signal as Ctrl-C: remembered in `STOPPED_EARLY`, then `KeyboardInterrupt`."""
    STOPPED_EARLY.set()
    raise KeyboardInterrupt


@contextlib.contextmanager
def sigint_as_flag() -> Iterator[SigintFlag]:
    """While inside, Ctrl-C or SIGTERM sets the flag instead of raising or ending the process
    (mid-`recv`, mid-finalizer, ...).

    Outside the main thread signals cannot be handled; the flag then just stays unset.
    """
    flag = SigintFlag()
    if STOPPED_EARLY.is_set():
        flag.set()  # a stop signal came while the run started, and its interrupt was lost
        STOPPED_EARLY.raised = False
    if threading.current_thread() is not threading.main_thread():
        yield flag
        return
    previous = {number: signal.signal(number, flag.set) for number in STOP_SIGNALS}
    try:
        yield flag
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)


__all__ = ["STOPPED_EARLY", "STOP_SIGNALS", "SigintFlag", "sigint_as_flag", "stop_raising"]
