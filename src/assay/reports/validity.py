"""Whether a run's figures can be trusted: too many errors, nothing served, a client that fell
behind its schedule or a lost load process makes it invalid.

The error-rate rule allows for chance. A server that errs at exactly the allowed rate still
gives 1 error in 10 requests fairly often, so a small run's error count is judged by the exact
binomial test: the run is invalid when a server erring at the allowed rate would give at least
this many errors in fewer than `CHANCE` of runs of the same size (the rate is above the limit
with 95 % confidence). Above the limit but within chance is a note, not a verdict.
"""

from __future__ import annotations

import math
from typing import Final

from pydantic import BaseModel, ConfigDict, Field

from assay.metrics.step_metrics import Outcomes
from assay.spec.validation import DEFAULT_MAX_NOT_SENT_RATE as DEFAULT_MAX_NOT_SENT_RATE

CHANCE: Final = 0.05
"""The error-rate rule's margin: an error count whose chance at the allowed rate is below this
(one-sided) is beyond chance."""


class Validity(BaseModel):
    """The verdict on a run, with every reason it is invalid (none when valid), and notes that
    do not change it (an error rate above the limit in a sample too small to tell)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    valid: bool
    reasons: tuple[str, ...] = ()
    # Left out of report.json when empty, so a report of an earlier version is written back whole.
    notes: tuple[str, ...] = Field(default=(), exclude_if=lambda notes: not notes)


def chance_of_at_least(errors: int, finished: int, rate: float) -> float:
    """The probability of `errors` or more errors in `finished` requests that each err with
    probability `rate` (the upper tail of the binomial distribution).

    >>> round(chance_of_at_least(1, 10, 0.05), 4)  # 1 - 0.95 ** 10
    0.4013
    >>> round(chance_of_at_least(3, 10, 0.05), 4)
    0.0115
    >>> chance_of_at_least(0, 10, 0.05), chance_of_at_least(1, 10, 0.0)
    (1.0, 0.0)
    """
    if errors <= 0:
        return 1.0
    if errors > finished or rate <= 0.0:
        return 0.0
    if rate >= 1.0:
        return 1.0
    odds = rate / (1.0 - rate)

    def probability(k: int) -> float:
        log = (
            math.lgamma(finished + 1)
            - math.lgamma(k + 1)
            - math.lgamma(finished - k + 1)
            + k * math.log(rate)
            + (finished - k) * math.log1p(-rate)
        )
        return math.exp(log)

    # Sum from the given count away from the mean: the terms shrink geometrically, so the sum
    # stops after a few standard deviations however many requests finished.
    if errors > finished * rate:
        term = total = probability(errors)
        for k in range(errors, finished):
            term *= (finished - k) / (k + 1) * odds
            total += term
            if term <= total * 1e-17:
                break
        return min(total, 1.0)
    term = below = probability(errors - 1)
    for k in range(errors - 1, 0, -1):
        term *= k / (finished - k + 1) / odds
        below += term
        if term <= below * 1e-17:
            break
    return max(1.0 - below, 0.0)


def assess_validity(
    outcomes: Outcomes,
    max_error_rate: float,
    *,
    scheduled: int | None = None,
    not_sent: int = 0,
    max_not_sent_rate: float = DEFAULT_MAX_NOT_SENT_RATE,
    lost_processes: tuple[str, ...] = (),
) -> Validity:
    """The run's verdict (`assay.worker.judge` gives each request's): invalid when errored /
    (completed + errored) exceeds `max_error_rate` beyond chance (see the module), nothing
    completed, more than `max_not_sent_rate` of the `scheduled` requests were never sent (the
    client, not the server, set the pace), or a load process was lost (its slice of the load is
    missing).

    >>> assess_validity(Outcomes(dispatched=10, completed=10), max_error_rate=0.05).valid
    True
    >>> half = Outcomes(dispatched=10, completed=5, errored=5)
    >>> assess_validity(half, max_error_rate=0.05).reasons[0].split(" (")[0]
    'error rate 50.0 % exceeds the allowed 5.0 %'
    >>> one_in_ten = assess_validity(Outcomes(dispatched=10, completed=9, errored=1), 0.05)
    >>> one_in_ten.valid, one_in_ten.notes[0].split(",")[0]
    (True, 'error rate 10.0 % (1 errored of 10 finished) is above the allowed 5.0 %')
    >>> behind = assess_validity(
    ...     Outcomes(dispatched=90, completed=90), 0.05, scheduled=100, not_sent=10
    ... )
    >>> behind.reasons[0].split(": ")[1]
    '10 of 100 scheduled requests (10.0 %) were never sent, above the allowed 5.0 %'

    """
    reasons: list[str] = []
    notes: list[str] = []
    if outcomes.completed == 0:
        reasons.append(f"no request completed ({outcomes.dispatched} dispatched)")
    rate = outcomes.error_rate
    if rate > max_error_rate:
        errored = outcomes.errored
        finished = outcomes.completed + errored
        chance = chance_of_at_least(errored, finished, max_error_rate)
        limit = f"{max_error_rate * 100:.1f} %"
        odds = (
            f"a server erring at exactly {limit} gives {errored} or more errors in "
            f"{finished} requests in {_percent(chance)} of runs"
        )
        if chance < CHANCE:
            reasons.append(
                f"error rate {rate * 100:.1f} % exceeds the allowed {limit} "
                f"({errored} errored of {finished} finished; beyond chance: {odds})"
            )
        else:
            notes.append(
                f"error rate {rate * 100:.1f} % ({errored} errored of {finished} finished) is "
                f"above the allowed {limit}, but too few requests finished to tell it from "
                f"chance ({odds}; the run is invalid below {CHANCE * 100:g} %)"
            )
    if scheduled and not_sent / scheduled > max_not_sent_rate:
        # With a load process lost, its slice is most of what went unsent.
        cause = "" if lost_processes else "the client fell behind its schedule: "
        reasons.append(
            f"{cause}{not_sent} of {scheduled} scheduled requests "
            f"({not_sent / scheduled * 100:.1f} %) were never sent, above the allowed "
            f"{max_not_sent_rate * 100:.1f} %"
        )
    reasons.extend(f"degraded run, {reason}" for reason in lost_processes)
    return Validity(valid=not reasons, reasons=tuple(reasons), notes=tuple(notes))


def _percent(probability: float) -> str:
    """A small probability in words a reader can weigh: "40 %", "1.2 %", "under 0.1 %".

    >>> _percent(0.4013), _percent(0.012), _percent(0.00002)
    ('40 %', '1.2 %', 'under 0.1 %')
    """
    if probability < 0.001:
        return "under 0.1 %"
    if probability < 0.1:
        return f"{probability * 100:.1f} %"
    return f"{probability * 100:.0f} %"
