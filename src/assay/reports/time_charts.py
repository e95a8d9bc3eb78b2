"""The report's charts over a run's time: throughput, the ramp's rate, TTFT, errors and
concurrency, from each step's timeline."""

from __future__ import annotations

from pydantic import JsonValue

from assay.metrics.timeline import TimelineSnapshot
from assay.reports.chart_base import (
    Figure,
    chart_layout,
    say_no_data,
    scatter,
    step_colour,
    step_label,
)
from assay.reports.report import Report, StepReport


def time_axis(report: Report) -> list[tuple[StepReport, TimelineSnapshot, list[float]]]:
    """Each step's timeline with its bucket start times in seconds from the run's first step."""
    timelines = [(step, step.timeline) for step in report.steps if step.timeline is not None]
    if not timelines:
        return []
    origin = min(timeline.origin_ns for _, timeline in timelines)
    out: list[tuple[StepReport, TimelineSnapshot, list[float]]] = []
    for step, timeline in timelines:
        offset = (timeline.origin_ns - origin) / 1e9
        times = [offset + i * timeline.interval_s for i in range(timeline.buckets)]
        out.append((step, timeline, times))
    return out


def throughput_over_time_figure(report: Report) -> Figure:
    """Requests per second over the run: usable (completed) against attempted (dispatched)."""
    data: list[dict[str, JsonValue]] = []
    for step, timeline, times in time_axis(report):
        per_s = 1 / timeline.interval_s
        label = step_label(step)
        colour = step_colour(step)
        usable = [c * per_s for c in timeline.completed]
        attempted = [c * per_s for c in timeline.dispatched]
        data.append(scatter("lines", f"usable, {label}", times, usable, line={"color": colour}))
        dotted: JsonValue = {"color": colour, "dash": "dot"}
        data.append(scatter("lines", f"attempted, {label}", times, attempted, line=dotted))
    return Figure(
        "throughput-time",
        "Requests per second over time",
        data,
        chart_layout("Requests/s over time: usable vs attempted", "seconds into the run", "req/s"),
        "Usable (solid) counts completed requests by finish time; attempted (dotted) counts "
        "dispatches. One colour per step.",
    )


RAMP_TARGET_POINTS = 100
"""Points drawn along a ramp's target curve (the curve is smooth: a hundred is plenty)."""


def ramp_rate_figure(report: Report) -> Figure:
    """The rate a ramped step dispatched at, interval by interval, against its target curve.

    The achieved rate is each interval's dispatched requests over its width, drawn at the
    interval's middle; the target is the ramp's rate at each point of the step.
    """
    data: list[dict[str, JsonValue]] = []
    for step, timeline, times in time_axis(report):
        ramp = step.ramp
        if ramp is None:
            continue
        width = timeline.interval_s
        offset = times[0] if times else 0.0
        label = step_label(step)
        length = max(ramp.duration_s, width * timeline.buckets)
        points = [length * i / RAMP_TARGET_POINTS for i in range(RAMP_TARGET_POINTS + 1)]
        target = [ramp.rate_at(t) for t in points]
        dashed: JsonValue = {"color": "#616161", "dash": "dash"}
        xs = [offset + t for t in points]
        data.append(scatter("lines", f"target, {label}", xs, target, line=dashed))
        middles = [start + width / 2 for start in times]
        achieved = [count / width for count in timeline.dispatched]
        line: JsonValue = {"color": "#1565c0"}
        data.append(scatter("lines+markers", f"achieved, {label}", middles, achieved, line=line))
    layout = chart_layout("Offered rate: achieved vs target", "seconds into the run", "req/s")
    if not data:
        say_no_data(layout, "no ramped step with a timeline")
    return Figure(
        "ramp-rate",
        "Ramp: achieved rate against its target",
        data,
        layout,
        "Achieved counts dispatches per interval; the target is the ramp's curve.",
    )


def ttft_over_time_figure(report: Report) -> Figure:
    """Mean and max time to first token of the requests sent in each interval."""
    data: list[dict[str, JsonValue]] = []
    for step, timeline, times in time_axis(report):
        label, colour = step_label(step), step_colour(step)
        solid: JsonValue = {"color": colour}
        dotted: JsonValue = {"color": colour, "dash": "dot"}
        for name, values, line in (
            ("mean", timeline.ttft_ms_mean, solid),
            ("max", timeline.ttft_ms_max, dotted),
        ):
            trace = scatter(
                "lines", f"{name}, {label}", times, values, line=line, connectgaps=False
            )
            data.append(trace)
    return Figure(
        "ttft-time",
        "Time to first token over time",
        data,
        chart_layout("TTFT over time (by send time)", "seconds into the run", "ms"),
    )


def errors_over_time_figure(report: Report) -> Figure:
    """Errored requests per second, by diagnostic code, stacked."""
    data: list[dict[str, JsonValue]] = []
    series: dict[str, tuple[list[float], list[float]]] = {}
    widths: dict[str, list[float]] = {}
    for _, timeline, times in time_axis(report):
        per_s = 1 / timeline.interval_s
        for code, counts in timeline.errored_by_code.items():
            xs, ys = series.setdefault(code, ([], []))
            # A bar spans its interval: x is the interval's middle, its width the interval.
            xs.extend(t + timeline.interval_s / 2 for t in times)
            ys.extend(c * per_s for c in counts)
            widths.setdefault(code, []).extend([timeline.interval_s] * len(times))
    for code, (xs, ys) in sorted(series.items()):
        bar_widths: list[JsonValue] = list(widths[code])
        data.append(
            {"type": "bar", "name": code, "x": list(xs), "y": list(ys), "width": bar_widths}
        )
    layout = chart_layout(
        "Errors per second by code", "seconds into the run", "errors/s", barmode="stack", bargap=0
    )
    if not data:
        say_no_data(layout, "no request errored")
    return Figure("errors-time", "Errors per second by code", data, layout)


def concurrency_over_time_figure(report: Report) -> Figure:
    """The time-averaged number of requests in flight per interval."""
    data = [
        scatter(
            "lines",
            step_label(step),
            times,
            timeline.concurrency_mean,
            line={"color": step_colour(step)},
            fill="tozeroy",
        )
        for step, timeline, times in time_axis(report)
    ]
    return Figure(
        "concurrency-time",
        "Requests in flight over time",
        data,
        chart_layout("Requests in flight (time-averaged)", "seconds into the run", "requests"),
    )
