"""Ctrl-C as a flag: the parent polls it instead of a `KeyboardInterrupt` raised anywhere."""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator


class SigintFlag:
    """Set by SIGINT; read with `is_set()`.

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


@contextlib.contextmanager
def sigint_as_flag() -> Iterator[SigintFlag]:
    """While inside, Ctrl-C sets the flag instead of raising (mid-`recv`, mid-finalizer, ...).

    Outside the main thread signals cannot be handled; the flag then just stays unset.
    """
    flag = SigintFlag()
    if threading.current_thread() is not threading.main_thread():
        yield flag
        return
    previous = signal.signal(signal.SIGINT, flag.set)
    try:
        yield flag
    finally:
        signal.signal(signal.SIGINT, previous)


__all__ = ["SigintFlag", "sigint_as_flag"]
