"""The client-bound verdict: one line when a load process read what arrived late, so the
latencies it measured include its own delay (`assay.load.loop_probe` measures; this says)."""

from __future__ import annotations

import html

from assay.load.loop_probe import CPU_LIMIT, ClientLoad, client_saturated
from assay.reports.report import Report, StepReport


def client_bound_line(loads: tuple[ClientLoad, ...]) -> str | None:
    """ "CLIENT-BOUND: ..." naming the latest saturated process and the figures that decided;
    None when no process was saturated.

    >>> load = ClientLoad(process=1, wall_s=10, cpu_s=9.7, cpu_busy=0.97, interval_ms=10,
    ...     ticks=400, lag_mean_ms=14.2, lag_p99_ms=50, lag_max_ms=61.3)
    >>> line = client_bound_line((load,))
    >>> line.split(" (")[0]
    "CLIENT-BOUND: load process 1's event loop ran 14.2 ms late on average"
    >>> line.split(") ")[1].split(":")[0]
    'while it used 97 % of a core'
    >>> line.split(": ")[2]
    'latency figures include up to 61 ms of client delay; add --processes or a machine'
    """
    saturated = [load for load in loads if client_saturated(load)]
    if not saturated:
        return None
    worst = max(saturated, key=lambda load: load.lag_mean_ms)
    why = (
        f"while it used {worst.cpu_busy * 100:.0f} % of a core"
        if worst.cpu_busy >= CPU_LIMIT
        else f"while it got only {worst.cpu_busy * 100:.0f} % of a core (the machine was busy)"
    )
    others = len(saturated) - 1
    also = f" (and {others} other process{'es' if others > 1 else ''})" if others else ""
    return (
        f"CLIENT-BOUND: load process {worst.process}'s event loop{also} ran "
        f"{worst.lag_mean_ms:.1f} ms late on average (p99 {worst.lag_p99_ms:.0f} ms, "
        f"max {worst.lag_max_ms:.0f} ms) {why}: latency figures include up to "
        f"{worst.lag_max_ms:.0f} ms of client delay; add --processes or a machine"
    )


def with_client_verdicts(report: Report) -> Report:
    """`report` with each step's `client_bound` line where its load processes were saturated."""
    lines = {step.index: client_bound_line(step.client_load) for step in report.steps}
    if all(line is None for line in lines.values()):
        return report
    steps = tuple(
        step.model_copy(update={"client_bound": lines[step.index]}) for step in report.steps
    )
    return report.model_copy(update={"steps": steps})


def step_client_bound(step: StepReport) -> str | None:
    """The step's stored line, else the one its client figures give."""
    return step.client_bound or client_bound_line(step.client_load)


def client_bound_html(report: Report) -> str:
    """report.html's banner per client-bound step; "" when none was."""
    lines = [
        (step.index, line) for step in report.steps if (line := step_client_bound(step)) is not None
    ]
    if not lines:
        return ""
    items = "".join(
        f'<p class="client-bound"><b>Step {index}</b>: {html.escape(line)}</p>'
        for index, line in lines
    )
    return f'<section id="client-bound">{items}</section>'
