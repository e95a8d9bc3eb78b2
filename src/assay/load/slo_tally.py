"""Count a step's attempted requests and each percentile SLO's misses, record by record.

Only requests whose targeted start falls in the step's measured window count (the warm-up is
left out, as from the report). A request that did not complete (errored with any code, or
cancelled) misses every SLO; a completed one misses an SLO whose figure is over the limit, or
absent where it is required (a streamed answer with no first token misses a TTFT SLO). The
figures are goodput's (`assay.metrics.slo.Slo`): TTFT from the send, TPOT over the output
tokens after the first, the worst inter-token gap, E2E from the send; an answer that came
whole (not streamed) reaches its first token at its end. Requests never sent are added by the
step (`SloMisses.with_not_sent`): they miss every SLO too.
"""

from __future__ import annotations

from dataclasses import dataclass

from assay.core import GenerationResponse
from assay.records import Cancelled, Completed, Errored, RequestRecord
from assay.spec.capacity import SloFigure, SloTarget

_MS = 1e-6


@dataclass(frozen=True, slots=True)
class SloMisses:
    """Attempted requests of a step and, per SLO (in the profile's order), how many missed.

    >>> SloMisses(10, (1, 0)) + SloMisses(5, (2, 1))
    SloMisses(attempted=15, missed=(3, 1))
    """

    attempted: int
    missed: tuple[int, ...]

    def __add__(self, other: SloMisses) -> SloMisses:
        if len(other.missed) != len(self.missed):
            raise ValueError("miss counts of different SLO lists cannot be added")
        return SloMisses(
            self.attempted + other.attempted,
            tuple(a + b for a, b in zip(self.missed, other.missed, strict=True)),
        )

    def with_not_sent(self, not_sent: int) -> SloMisses:
        """These counts with `not_sent` requests that were owed and never went out: each is
        attempted and misses every SLO.

        >>> SloMisses(10, (1,)).with_not_sent(3)
        SloMisses(attempted=13, missed=(4,))
        """
        return SloMisses(self.attempted + not_sent, tuple(m + not_sent for m in self.missed))


def figure_ms(response: GenerationResponse, figure: SloFigure) -> float | None:
    """The request's value of `figure` in milliseconds; None when it has none (see the module)."""
    timing = response.timing
    e2e = timing.end_ns - timing.send_ns
    match figure:
        case "e2e_ms":
            return e2e * _MS
        case "ttft_ms":
            if not response.streamed:
                return e2e * _MS
            first = timing.first_token_ns
            return None if first is None else (first - timing.send_ns) * _MS
        case "tpot_ms":
            first = timing.first_token_ns
            tokens = response.output_tokens
            if not response.streamed or first is None or tokens < 2:
                return 0.0  # no TPOT: met trivially, as for goodput
            return (timing.end_ns - first) / (tokens - 1) * _MS
        case "itl_ms":
            return _worst_gap_ns(timing.chunk_times_ns, timing.chunk_tokens) * _MS


def _worst_gap_ns(times: tuple[int, ...], counts: tuple[int, ...]) -> float:
    """The longest gap between tokens; a read of several tokens spreads its gap over them."""
    worst = 0.0
    for position in range(1, len(times)):
        tokens = counts[position] if position < len(counts) else 1
        worst = max(worst, (times[position] - times[position - 1]) / max(1, tokens))
    return worst


def misses(response: GenerationResponse, slos: tuple[SloTarget, ...]) -> tuple[bool, ...]:
    """Which SLOs a completed answer misses."""
    result = []
    for slo in slos:
        value = figure_ms(response, slo.figure)
        result.append(value is None or value > slo.limit_ms)
    return tuple(result)


class SloTally:
    """The live counts of one step in one process (runtime state, one record at a time)."""

    __slots__ = ("_attempted", "_missed", "_slos", "_window")

    def __init__(self, slos: tuple[SloTarget, ...], window: tuple[int, int | None]) -> None:
        self._slos = slos
        self._window = window
        self._attempted = 0
        self._missed = [0] * len(slos)

    def add(self, record: RequestRecord[GenerationResponse]) -> None:
        """Count one finished record, if it falls in the measured window."""
        start, end = self._window
        if record.targeted_start_ns < start or (
            end is not None and record.targeted_start_ns >= end
        ):
            return
        self._attempted += 1
        outcome = record.outcome
        # Told by its type first: a pydantic model's instance check (a class pattern's) is a
        # Python call, and most records are completed.
        if type(outcome) is Completed or isinstance(outcome, Completed):
            for position, missed in enumerate(misses(outcome.response, self._slos)):
                self._missed[position] += missed
        else:
            match outcome:
                case Errored() | Cancelled():
                    for position in range(len(self._missed)):
                        self._missed[position] += 1

    def counts(self) -> SloMisses:
        """The counts so far, as a frozen value."""
        return SloMisses(self._attempted, tuple(self._missed))


__all__ = ["SloMisses", "SloTally", "figure_ms", "misses"]
