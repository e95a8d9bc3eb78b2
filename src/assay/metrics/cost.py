"""What a step's work cost: the server's price over the step's duration, divided by what it
served (usable: completed answers only) and by what it was asked (attempted: every dispatched
request), so a server that answers fast with errors does not look cheap.

The price is the run's `--cost-per-hour` (`assay.spec.price`). With the energy the GPUs used
over the step (joules), the energy per output token is divided the same two ways.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from assay.metrics.step_metrics import StepMetrics
from assay.spec.price import Price, parse_price


class StepCost(BaseModel):
    """A step's cost (USD) and energy (joules), per unit of usable and of attempted work.

    A figure is None when its divisor is 0 (nothing usable was served) or unknown (the input
    tokens when the server did not report them; the energy without GPU metrics).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    price: Price | None = None
    usd: float | None = None
    usd_per_million_usable_output_tokens: float | None = None
    usd_per_million_attempted_output_tokens: float | None = None
    usd_per_million_usable_total_tokens: float | None = None
    usd_per_thousand_usable_requests: float | None = None
    usd_per_thousand_attempted_requests: float | None = None
    energy_joules: float | None = None
    joules_per_usable_output_token: float | None = None
    joules_per_attempted_output_token: float | None = None


def _per(amount: float | None, units: float | None, scale: float) -> float | None:
    if amount is None or units is None or units <= 0:
        return None
    return amount / units * scale


def step_cost(
    metrics: StepMetrics, price: Price | None, energy_joules: float | None = None
) -> StepCost | None:
    """The cost of one step's work at `price` (and its energy); None with neither.

    >>> from assay.metrics import StepAggregator
    >>> metrics = StepAggregator().snapshot().model_copy(update={"throughput":
    ...     StepAggregator().snapshot().throughput.model_copy(update={"duration_s": 3600.0,
    ...         "usable_output_tokens": 2_000_000, "attempted_output_tokens": 4_000_000})})
    >>> cost = step_cost(metrics, Price(usd_per_gpu_hour=2.5, gpus=4))
    >>> cost.usd, cost.usd_per_million_usable_output_tokens
    (10.0, 5.0)
    >>> cost.usd_per_million_attempted_output_tokens
    2.5
    """
    if price is None and energy_joules is None:
        return None
    throughput = metrics.throughput
    outcomes = metrics.outcomes
    usd = None if price is None else price.usd_per_hour * throughput.duration_s / 3600
    inputs = throughput.usable_input_tokens
    total = None if inputs is None else inputs + throughput.usable_output_tokens
    return StepCost(
        price=price,
        usd=usd,
        usd_per_million_usable_output_tokens=_per(usd, throughput.usable_output_tokens, 1e6),
        usd_per_million_attempted_output_tokens=_per(usd, throughput.attempted_output_tokens, 1e6),
        usd_per_million_usable_total_tokens=_per(usd, total, 1e6),
        usd_per_thousand_usable_requests=_per(usd, outcomes.completed, 1e3),
        usd_per_thousand_attempted_requests=_per(usd, outcomes.dispatched, 1e3),
        energy_joules=energy_joules,
        joules_per_usable_output_token=_per(energy_joules, throughput.usable_output_tokens, 1),
        joules_per_attempted_output_token=_per(
            energy_joules, throughput.attempted_output_tokens, 1
        ),
    )


__all__ = ["Price", "StepCost", "parse_price", "step_cost"]
