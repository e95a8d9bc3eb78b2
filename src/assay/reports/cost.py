"""Cost and energy per unit of usable work, per step: the console's lines and the page's cards.

A step's `cost` (`assay.metrics.cost.StepCost`) comes from the run's price (`--cost-per-hour`)
and the GPUs' energy over the step (DCGM samples in the server's metrics); a report written
without it gets it computed from the same report, so any stored run shows it.
"""

from __future__ import annotations

import html
from collections.abc import Callable

from assay.metrics.cost import Price, StepCost, step_cost
from assay.reports.report import Report, StepReport


def price_of(report: Report) -> Price | None:
    """The server's price the run was given (`--cost-per-hour`); None when it was given none."""
    return report.run_config.cost_per_hour


def energy_of(step: StepReport, report: Report) -> float | None:
    """The GPUs' energy over `step` (J), from the report's server metrics; None without."""
    steps = () if report.server_metrics is None else report.server_metrics.steps
    return next((c.gpu_energy_joules for c in steps if c.index == step.index), None)


def cost_of(step: StepReport, report: Report, price: Price | None) -> StepCost | None:
    """The step's stored cost, else the one its metrics give at `price` with its energy."""
    if step.cost is not None:
        return step.cost
    return step_cost(step.metrics, price, energy_of(step, report))


def with_costs(report: Report, price: Price | None) -> Report:
    """`report` with each step's `cost` at `price` and with its energy (unchanged with none)."""
    costs = {step.index: cost_of(step, report, price) for step in report.steps}
    if all(cost is None for cost in costs.values()):
        return report
    steps = tuple(step.model_copy(update={"cost": costs[step.index]}) for step in report.steps)
    return report.model_copy(update={"steps": steps})


def _usd(value: float | None) -> str:
    if value is None:
        return "-"
    return f"${value:.4f}" if value < 1 else f"${value:,.2f}"


def _joules(value: float | None) -> str:
    return "-" if value is None else f"{value:.3g} J"


def cost_lines(cost: StepCost | None) -> list[str]:
    """The console's lines for one step's cost and energy, usable beside attempted."""
    if cost is None:
        return []
    lines = []
    if cost.price is not None:
        lines.append(
            f"Cost at {cost.price.words()} ({_usd(cost.usd)} for the step): "
            f"{_usd(cost.usd_per_million_usable_output_tokens)} per million usable output "
            f"tokens (attempted: {_usd(cost.usd_per_million_attempted_output_tokens)}), "
            f"{_usd(cost.usd_per_million_usable_total_tokens)} per million usable total tokens, "
            f"{_usd(cost.usd_per_thousand_usable_requests)} per thousand usable requests "
            f"(attempted: {_usd(cost.usd_per_thousand_attempted_requests)})"
        )
    if cost.energy_joules is not None:
        lines.append(
            f"GPU energy: {cost.energy_joules:,.0f} J over the step, "
            f"{_joules(cost.joules_per_usable_output_token)} per usable output token "
            f"(attempted: {_joules(cost.joules_per_attempted_output_token)})"
        )
    return lines


_CARDS: tuple[
    tuple[str, Callable[[StepCost], float | None], Callable[[float | None], str]], ...
] = (
    ("$ / M usable output tokens", lambda c: c.usd_per_million_usable_output_tokens, _usd),
    ("$ / M attempted output tokens", lambda c: c.usd_per_million_attempted_output_tokens, _usd),
    ("$ / M usable total tokens", lambda c: c.usd_per_million_usable_total_tokens, _usd),
    ("$ / 1k usable requests", lambda c: c.usd_per_thousand_usable_requests, _usd),
    ("J / usable output token", lambda c: c.joules_per_usable_output_token, _joules),
    ("J / attempted output token", lambda c: c.joules_per_attempted_output_token, _joules),
)


def cost_html(report: Report, price: Price | None = None) -> str:
    """report.html's cost and energy cards, a row per step; "" when no step has either."""
    rows = []
    for step in report.steps:
        cost = cost_of(step, report, price)
        if cost is None:
            continue
        cards = "".join(
            f'<div class="card"><span class="muted">{html.escape(label)}</span>'
            f"<b>{html.escape(shown(value))}</b></div>"
            for label, read, shown in _CARDS
            if (value := read(cost)) is not None
        )
        price_words = "" if cost.price is None else f" at {html.escape(cost.price.words())}"
        rows.append(f'<h3>Step {step.index}{price_words}</h3><div class="cards">{cards}</div>')
    if not rows:
        return ""
    return (
        '<section id="cost"><h2>Cost and energy per unit of work</h2>'
        "<p>Usable figures divide by completed answers only, attempted ones by everything "
        "dispatched.</p>"
        f"{''.join(rows)}</section>"
    )
