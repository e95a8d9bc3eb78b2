"""The live progress display: a rich panel on a terminal, plain log lines elsewhere."""

from __future__ import annotations

import time
from types import TracebackType

from rich.console import Console
from rich.live import Live
from rich.text import Text

from assay.load.progress import ProgressSnapshot

_PLAIN_EVERY_S = 2.0


def describe(snapshot: ProgressSnapshot, steps: int | None, max_seconds: float | None) -> str:
    """One line: step, elapsed/remaining, outcomes, served (completed) req/s, top error codes.

    >>> from assay.load.progress import OutcomeTotals
    >>> s = ProgressSnapshot(3.0, 0, OutcomeTotals(10, 7, 1, 0), 2.5, (("http_status", 1),))
    >>> describe(s, 1, 10.0).split("  ")[:4]
    ['step 1/1', '3.0s (7s left)', 'completed 7', 'errored 1']
    """
    totals = snapshot.totals
    step = f"step {snapshot.step + 1}" + (f"/{steps}" if steps else "")
    clock = f"{snapshot.elapsed_s:.1f}s"
    if max_seconds is not None:
        clock += f" ({max(0.0, max_seconds - snapshot.elapsed_s):.0f}s left)"
    line = (
        f"{step}  {clock}  completed {totals.completed}  errored {totals.errored}  "
        f"cancelled {totals.cancelled}  in flight {totals.in_flight}  "
        f"served {snapshot.requests_per_s:.1f} req/s"
    )
    if snapshot.top_codes:
        line += "  errors: " + ", ".join(f"{code} {count}" for code, count in snapshot.top_codes)
    return line


class ProgressDisplay:
    """Shows progress snapshots as they come; use with `with` around the run."""

    def __init__(self, console: Console, *, steps: int | None, max_seconds: float | None) -> None:
        self._console = console
        self._steps = steps
        self._max_seconds = max_seconds
        self._live: Live | None = None
        self._last_plain = 0.0

    def __enter__(self) -> ProgressDisplay:
        if self._console.is_terminal:
            self._live = Live(
                Text("starting..."), console=self._console, refresh_per_second=4, transient=True
            )
            self._live.__enter__()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        if self._live is not None:
            self._live.__exit__(kind, error, trace)
            self._live = None

    def update(self, snapshot: ProgressSnapshot) -> None:
        """Take the newest snapshot (called from the run's progress callback)."""
        line = describe(snapshot, self._steps, self._max_seconds)
        if self._live is not None:
            self._live.update(Text(line))
            return
        now = time.monotonic()
        if now - self._last_plain >= _PLAIN_EVERY_S:
            self._last_plain = now
            self._console.print(line, highlight=False, soft_wrap=True)

    def note(self, message: str) -> None:
        """A line that stays (step boundaries, the target in use)."""
        self._console.print(message, highlight=False, soft_wrap=True)
