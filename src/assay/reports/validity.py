"""Whether a run's figures can be trusted: too many errors or nothing served makes it invalid."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from assay.metrics.step_metrics import Outcomes


class Validity(BaseModel):
    """The verdict on a run, with every reason it is invalid (none when valid)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    valid: bool
    reasons: tuple[str, ...] = ()


def judge(outcomes: Outcomes, max_error_rate: float) -> Validity:
    """Invalid when errored / (completed + errored) exceeds `max_error_rate` or nothing completed.

    >>> judge(Outcomes(dispatched=10, completed=10), max_error_rate=0.05).valid
    True
    >>> judge(Outcomes(dispatched=10, completed=5, errored=5), max_error_rate=0.05).reasons
    ('error rate 50.0 % exceeds the allowed 5.0 % (5 errored of 10 finished)',)
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
    return Validity(valid=not reasons, reasons=tuple(reasons))
