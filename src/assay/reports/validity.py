"""Whether a run's figures can be trusted: too many errors, nothing served, a client that fell
behind its schedule or a lost load process makes it invalid."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from assay.metrics.step_metrics import Outcomes
from assay.spec.validation import DEFAULT_MAX_NOT_SENT_RATE as DEFAULT_MAX_NOT_SENT_RATE


class Validity(BaseModel):
    """The verdict on a run, with every reason it is invalid (none when valid)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    valid: bool
    reasons: tuple[str, ...] = ()


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
    (completed + errored) exceeds `max_error_rate`, nothing completed, more than
    `max_not_sent_rate` of the `scheduled` requests were never sent (the client, not the server,
    set the pace), or a load process was lost (its slice of the load is missing).

    >>> assess_validity(Outcomes(dispatched=10, completed=10), max_error_rate=0.05).valid
    True
    >>> half = Outcomes(dispatched=10, completed=5, errored=5)
    >>> assess_validity(half, max_error_rate=0.05).reasons
    ('error rate 50.0 % exceeds the allowed 5.0 % (5 errored of 10 finished)',)
    >>> behind = assess_validity(
    ...     Outcomes(dispatched=90, completed=90), 0.05, scheduled=100, not_sent=10
    ... )
    >>> behind.reasons[0].split(": ")[1]
    '10 of 100 scheduled requests (10.0 %) were never sent, above the allowed 5.0 %'

    """
    reasons: list[str] = []
    if outcomes.completed == 0:
        reasons.append(f"no request completed ({outcomes.dispatched} dispatched)")
    rate = outcomes.error_rate
    if rate > max_error_rate:
        finished = outcomes.completed + outcomes.errored
        reasons.append(
            f"error rate {rate * 100:.1f} % exceeds the allowed {max_error_rate * 100:.1f} % "
            f"({outcomes.errored} errored of {finished} finished)"
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
    return Validity(valid=not reasons, reasons=tuple(reasons))
