"""One table across a run's steps: the view a sweep is made for (load offered against what was
served, latency and errors), printed after the per-step blocks.
"""

from __future__ import annotations

from rich import box
from rich.table import Table

from assay.metrics.sketch import Distribution
from assay.reports.report import Report
from assay.reports.step_words import MIN_RATE_WINDOW_S, format_ms, offered, rate_is_meaningful
from assay.spec.constraints import StopReason


def _stop_name(reason: StopReason) -> str:
    """What stopped a step, in a table cell (a new `StopReason` is a type error here)."""
    match reason:
        case StopReason.max_seconds:
            return "time limit"
        case StopReason.max_requests:
            return "max requests"
        case StopReason.max_errors:
            return "max errors"
        case StopReason.stop_error_rate:
            return "error rate"
        case StopReason.stop_signal:
            return "interrupt"
        case StopReason.data_exhausted:
            return "data exhausted"


def steps_table(report: Report) -> Table:
    """A row per step: offered load, dispatched and usable req/s, TTFT and ITL p50/p99, error
    rate, goodput (when an SLO was given) and what stopped the step.

    Rates of a step shorter than `MIN_RATE_WINDOW_S` are shown as "-".
    """
    with_goodput = any(step.metrics.goodput is not None for step in report.steps)
    table = Table(
        title="Steps (latency in ms over completed requests)",
        title_justify="left",
        box=box.SIMPLE_HEAD,
        show_edge=False,
    )
    table.add_column("step", justify="right", no_wrap=True)
    table.add_column("offered", no_wrap=True)
    headers = (
        "dispatched\nreq/s",
        "usable\nreq/s",
        "TTFT\np50",
        "TTFT\np99",
        "ITL\np50",
        "ITL\np99",
        "error\nrate",
    )
    for name in headers:
        table.add_column(name, justify="right", no_wrap=True)
    if with_goodput:
        table.add_column("goodput\nreq/s", justify="right", no_wrap=True)
    table.add_column("stopped\nby", overflow="fold")
    short = False
    for step in report.steps:
        m = step.metrics
        t = m.throughput
        meaningful = rate_is_meaningful(step)
        short = short or not meaningful

        def rate(value: float, meaningful: bool = meaningful) -> str:
            return f"{value:.2f}" if meaningful else "-"

        ttft, itl = m.latency.ttft_ms, m.latency.itl_ms
        row = [
            str(step.index + 1),
            offered(step),
            rate(t.attempted_requests_per_s),
            rate(t.usable_requests_per_s),
            _p(ttft, "p50"),
            _p(ttft, "p99"),
            _p(itl, "p50"),
            _p(itl, "p99"),
            f"{m.error_rate * 100:.1f} %",
        ]
        if with_goodput:
            row.append("" if m.goodput is None else rate(m.goodput.requests_per_s))
        row.append("" if step.stopped_by is None else _stop_name(step.stopped_by))
        table.add_row(*row)
    if short:
        table.caption = f"-: the step lasted under {MIN_RATE_WINDOW_S:g} s, too short for a rate"
        table.caption_justify = "left"
    return table


def _p(dist: Distribution | None, name: str) -> str:
    return "-" if dist is None else format_ms(float(getattr(dist, name)))
