"""Which load processes still answer: a heartbeat deadline the parent checks while a step runs.

A load process sends a progress message every 250 ms while it runs a step; one that sends
nothing for much longer is frozen (stopped with SIGSTOP, swapped out, deadlocked). Times are
passed in, so the rule is tested on a fake clock.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Generic, TypeVar

K = TypeVar("K")


class Heartbeats(Generic[K]):
    """When each expected sender was last heard from; `silent` names those past the deadline.

    >>> beats = Heartbeats[str](timeout_ns=1_000)
    >>> beats.expect(["a", "b"], now_ns=0)
    >>> beats.heard("a", now_ns=900)
    >>> beats.silent(now_ns=1_500)
    ['b']
    """

    __slots__ = ("_last_ns", "timeout_ns")

    def __init__(self, timeout_ns: int) -> None:
        self.timeout_ns = timeout_ns
        self._last_ns: dict[K, int] = {}

    def expect(self, senders: Iterable[K], now_ns: int) -> None:
        """Start waiting for `senders` as of `now_ns` (a new step), forgetting the others."""
        self._last_ns = dict.fromkeys(senders, now_ns)

    def heard(self, sender: K, now_ns: int) -> None:
        """`sender` said something at `now_ns` (ignored unless it is expected)."""
        if sender in self._last_ns:
            self._last_ns[sender] = max(self._last_ns[sender], now_ns)

    def forget(self, sender: K) -> None:
        """Stop expecting `sender` (its part is in, or it is gone)."""
        self._last_ns.pop(sender, None)

    def silent(self, now_ns: int) -> list[K]:
        """The expected senders not heard from for longer than the timeout."""
        return [sender for sender, last in self._last_ns.items() if now_ns - last > self.timeout_ns]


__all__ = ["Heartbeats"]
