"""The charts of the HTML report, as plotly.js figure specifications (plain data).

Each function turns part of a `Report` (and, for distributions, per-request latencies read from
records.jsonl) into a `Figure`: the `data` and `layout` that `Plotly.newPlot` draws. Building
plain dictionaries keeps the report independent of plotly's Python API (slow to import) while
the drawing is done by plotly.js itself, inlined into the page.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from pydantic import JsonValue

from assay.metrics.sketch import Distribution
from assay.metrics.timeline import TimelineSnapshot
from assay.reports.report import Report, StepReport
from assay.spec.validation import SLO_KEYS

PERCENTILE_FIELDS: tuple[tuple[str, str], ...] = (
    ("p50", "p50"),
    ("p90", "p90"),
    ("p95", "p95"),
    ("p99", "p99"),
    ("p999", "p99.9"),
)
LATENCY_METRICS: tuple[tuple[str, str], ...] = (
    ("ttft_ms", "Time to first token"),
    ("itl_ms", "Inter-token latency"),
    ("tpot_ms", "Time per output token"),
    ("e2e_ms", "End-to-end latency"),
)
# SLO keys as `--slo` takes them, and the latency metric each bounds (the one it is named after).
SLO_METRICS: Mapping[str, str] = {key: key for key in SLO_KEYS}
OUTCOME_COLOURS: Mapping[str, str] = {
    "completed": "#2e7d32",
    "errored": "#c62828",
    "cancelled": "#9e9e9e",
}
# One colour per step, the same on every chart (a step's usable and attempted lines differ by
# their dash, not their colour).
STEP_COLOURS: tuple[str, ...] = (
    "#1f77b4",
    "#ff7f0e",
    "#2ca02c",
    "#d62728",
    "#9467bd",
    "#8c564b",
    "#e377c2",
    "#7f7f7f",
    "#bcbd22",
    "#17becf",
)
SLO_COLOUR = "#c62828"


@dataclass(frozen=True, slots=True)
class Figure:
    """One chart: a stable id, a title for the page, and what plotly.js draws."""

    id: str
    title: str
    data: list[dict[str, JsonValue]]
    layout: dict[str, JsonValue] = field(default_factory=dict)
    caption: str = ""


def step_colour(step: StepReport) -> str:
    """The colour of `step` on every chart."""
    return STEP_COLOURS[step.index % len(STEP_COLOURS)]


def short_rate(rate: float) -> str:
    """A rate to three significant digits, never in exponent form: 16.6234 -> "16.6".

    >>> short_rate(16.6234), short_rate(20.0), short_rate(1234.5), short_rate(0.01234)
    ('16.6', '20', '1230', '0.0123')
    """
    rounded = float(f"{rate:.3g}")
    return f"{rounded:.0f}" if rounded >= 100 else f"{rounded:g}"


def step_label(step: StepReport) -> str:
    """A short name for a step on a chart axis: `1 constant 20/s`, `2 concurrent x8`.

    >>> from assay.metrics import StepAggregator
    >>> step_label(StepReport.of(0, "constant", StepAggregator().snapshot(), requested_rate=20))
    '1 constant 20/s'
    >>> step_label(StepReport.of(2, "sweep", StepAggregator().snapshot(), requested_rate=16.6234))
    '3 sweep 16.6/s'
    """
    name = f"{step.index + 1} {step.profile}"
    rate, streams = step.requested_rate, step.requested_concurrency
    match step.profile_kind:
        case "synchronous":
            streams = None  # always one in flight: not worth a label
        case "ramp_up" if step.ramp is not None:
            return f"{name} {step.ramp.start_rate:g}->{step.ramp.end_rate:g}/s"
        case (
            "concurrent"
            | "throughput"
            | "constant"
            | "poisson"
            | "ramp_up"
            | "sweep"
            | "replay"
            | None
        ):
            pass
    if rate is not None:
        return f"{name} {short_rate(rate)}/s"
    if streams is not None:
        return f"{name} x{streams}"
    return name


def _layout(title: str, x_title: str, y_title: str, **extra: JsonValue) -> dict[str, JsonValue]:
    layout: dict[str, JsonValue] = {
        "title": {"text": title},
        "xaxis": {"title": {"text": x_title}, "automargin": True},
        "yaxis": {"title": {"text": y_title}, "automargin": True, "rangemode": "tozero"},
        "margin": {"t": 48, "r": 16, "b": 48, "l": 56},
        # Below the plot, anchored to the figure's bottom edge: plotly makes room for it, so a
        # legend of many steps never covers the x-axis title.
        "legend": {"orientation": "h", "yref": "container", "y": 0, "yanchor": "bottom"},
        "height": 360,
    }
    layout.update(extra)
    return layout


def _say_no_data(layout: dict[str, JsonValue], text: str) -> None:
    """Put `text` in the middle of an empty chart, so it reads as "nothing", not as broken."""
    layout["annotations"] = [
        {
            "text": text,
            "showarrow": False,
            "xref": "paper",
            "yref": "paper",
            "x": 0.5,
            "y": 0.5,
            "font": {"size": 16},
        }
    ]


def outcomes_figure(report: Report) -> Figure:
    """Completed, errored and cancelled requests per step, stacked."""
    labels: list[JsonValue] = [step_label(step) for step in report.steps]
    data: list[dict[str, JsonValue]] = []
    for name, colour in OUTCOME_COLOURS.items():
        counts: list[JsonValue] = [getattr(step.metrics.outcomes, name) for step in report.steps]
        data.append(
            {"type": "bar", "name": name, "x": labels, "y": counts, "marker": {"color": colour}}
        )
    return Figure(
        "outcomes",
        "Outcomes by step",
        data,
        _layout("Outcomes by step", "step", "requests", barmode="stack"),
        "Every dispatched request ends in exactly one outcome.",
    )


def errors_figure(report: Report) -> Figure:
    """Errored requests by diagnostic code, per step (empty chart text when nothing errored)."""
    codes = sorted({str(code) for step in report.steps for code in step.metrics.errors_by_code})
    labels: list[JsonValue] = [step_label(step) for step in report.steps]
    data: list[dict[str, JsonValue]] = []
    for code in codes:
        counts: list[JsonValue] = []
        for step in report.steps:
            by_code = {str(key): value.count for key, value in step.metrics.errors_by_code.items()}
            counts.append(by_code.get(code, 0))
        data.append({"type": "bar", "name": code, "x": labels, "y": counts})
    layout = _layout("Errors by diagnostic code", "step", "errored requests", barmode="stack")
    if not codes:
        _say_no_data(layout, "no request errored")
    return Figure(
        "errors",
        "Errors by diagnostic code",
        data,
        layout,
        "What the server failed to serve, by the stable code assay gave each errored request.",
    )


def latency_percentiles_figure(report: Report, metric: str, title: str) -> Figure:
    """One latency metric's percentiles, a line per step."""
    data: list[dict[str, JsonValue]] = []
    for step in report.steps:
        distribution: Distribution | None = getattr(step.metrics.latency, metric)
        if distribution is None or distribution.count == 0:
            continue
        data.append(
            {
                "type": "scatter",
                "mode": "lines+markers",
                "name": step_label(step),
                "x": [label for _, label in PERCENTILE_FIELDS],
                "y": [float(getattr(distribution, name)) for name, _ in PERCENTILE_FIELDS],
                "line": {"color": step_colour(step)},
            }
        )
    layout = _layout(f"{title}: percentiles", "percentile", "ms")
    if not data:
        _say_no_data(layout, "not measured in this run")
    else:
        _draw_slo(layout, _slo_of(report).get(metric), axis="y")
    return Figure(f"latency-{metric}", f"{title} percentiles", data, layout)


def _draw_slo(layout: dict[str, JsonValue], slo: float | None, axis: str) -> None:
    """A dashed line at the SLO `slo` (ms) across the chart, on the `axis` ("x" or "y") that
    carries milliseconds, labelled; nothing when the run had no such SLO."""
    if slo is None:
        return
    across = "y" if axis == "x" else "x"
    layout["shapes"] = [
        {
            "type": "line",
            f"{across}ref": "paper",
            f"{across}0": 0,
            f"{across}1": 1,
            f"{axis}0": slo,
            f"{axis}1": slo,
            "line": {"color": SLO_COLOUR, "dash": "dash"},
        }
    ]
    label: dict[str, JsonValue] = {
        "text": f"SLO {slo:g} ms",
        "showarrow": False,
        "font": {"color": SLO_COLOUR},
        f"{across}ref": "paper",
    }
    if axis == "y":
        label.update({"x": 1, "xanchor": "right", "y": slo, "yanchor": "bottom"})
    else:
        label.update({"x": slo, "xanchor": "left", "y": 0.05, "yanchor": "bottom"})
    layout["annotations"] = [label]


def cdf_figure(
    metric: str,
    title: str,
    samples_by_step: Mapping[str, Sequence[float]],
    points: int = 400,
    report: Report | None = None,
) -> Figure:
    """The empirical CDF of per-request `metric` (ms) per step, at most `points` per line; with
    the `report`, in each step's colour and with the metric's SLO."""
    colours = {} if report is None else {step_label(s): step_colour(s) for s in report.steps}
    data: list[dict[str, JsonValue]] = []
    for label, samples in samples_by_step.items():
        if not samples:
            continue
        ordered = sorted(samples)
        count = len(ordered)
        step = max(1, count // points)
        indices = [*range(0, count, step)]
        if indices[-1] != count - 1:
            indices.append(count - 1)
        data.append(
            {
                "type": "scatter",
                "mode": "lines",
                "line": {"shape": "hv", "color": colours.get(label)},
                "name": label,
                "x": [ordered[i] for i in indices],
                "y": [(i + 1) / count for i in indices],
            }
        )
    layout = _layout(f"{title}: distribution (CDF)", "ms", "fraction of completed requests")
    layout["yaxis"] = {"title": {"text": "fraction of completed requests"}, "range": [0, 1.02]}
    if not data:
        _say_no_data(layout, "no completed request with this measure")
    elif report is not None:
        _draw_slo(layout, _slo_of(report).get(metric), axis="x")
    return Figure(f"cdf-{metric}", f"{title} distribution", data, layout)


def _time_axis(report: Report) -> list[tuple[StepReport, TimelineSnapshot, list[float]]]:
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
    for step, timeline, times in _time_axis(report):
        per_s = 1 / timeline.interval_s
        label = step_label(step)
        colour = step_colour(step)
        data.append(
            {
                "type": "scatter",
                "mode": "lines",
                "name": f"usable, {label}",
                "x": list(times),
                "y": [c * per_s for c in timeline.completed],
                "line": {"color": colour},
            }
        )
        data.append(
            {
                "type": "scatter",
                "mode": "lines",
                "name": f"attempted, {label}",
                "x": list(times),
                "y": [c * per_s for c in timeline.dispatched],
                "line": {"color": colour, "dash": "dot"},
            }
        )
    return Figure(
        "throughput-time",
        "Requests per second over time",
        data,
        _layout("Requests/s over time: usable vs attempted", "seconds into the run", "req/s"),
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
    for step, timeline, times in _time_axis(report):
        ramp = step.ramp
        if ramp is None:
            continue
        width = timeline.interval_s
        offset = times[0] if times else 0.0
        label = step_label(step)
        length = max(ramp.duration_s, width * timeline.buckets)
        points = [length * i / RAMP_TARGET_POINTS for i in range(RAMP_TARGET_POINTS + 1)]
        data.append(
            {
                "type": "scatter",
                "mode": "lines",
                "name": f"target, {label}",
                "x": [offset + t for t in points],
                "y": [ramp.rate_at(t) for t in points],
                "line": {"color": "#616161", "dash": "dash"},
            }
        )
        data.append(
            {
                "type": "scatter",
                "mode": "lines+markers",
                "name": f"achieved, {label}",
                "x": [start + width / 2 for start in times],
                "y": [count / width for count in timeline.dispatched],
                "line": {"color": "#1565c0"},
            }
        )
    layout = _layout("Offered rate: achieved vs target", "seconds into the run", "req/s")
    if not data:
        _say_no_data(layout, "no ramped step with a timeline")
    return Figure(
        "ramp-rate",
        "Ramp: achieved rate against its target",
        data,
        layout,
        "Achieved counts dispatches per interval; the target is the ramp's curve.",
    )


def has_ramp(report: Report) -> bool:
    """Whether a step of the run followed a rate ramp."""
    return any(step.ramp is not None for step in report.steps)


def ttft_over_time_figure(report: Report) -> Figure:
    """Mean and max time to first token of the requests sent in each interval."""
    data: list[dict[str, JsonValue]] = []
    for step, timeline, times in _time_axis(report):
        label = step_label(step)
        data.append(
            {
                "type": "scatter",
                "mode": "lines",
                "name": f"mean, {label}",
                "x": list(times),
                "y": list(timeline.ttft_ms_mean),
                "line": {"color": step_colour(step)},
                "connectgaps": False,
            }
        )
        data.append(
            {
                "type": "scatter",
                "mode": "lines",
                "name": f"max, {label}",
                "x": list(times),
                "y": list(timeline.ttft_ms_max),
                "line": {"color": step_colour(step), "dash": "dot"},
                "connectgaps": False,
            }
        )
    return Figure(
        "ttft-time",
        "Time to first token over time",
        data,
        _layout("TTFT over time (by send time)", "seconds into the run", "ms"),
    )


def errors_over_time_figure(report: Report) -> Figure:
    """Errored requests per second, by diagnostic code, stacked."""
    data: list[dict[str, JsonValue]] = []
    series: dict[str, tuple[list[float], list[float]]] = {}
    widths: dict[str, list[float]] = {}
    for _, timeline, times in _time_axis(report):
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
    layout = _layout(
        "Errors per second by code", "seconds into the run", "errors/s", barmode="stack", bargap=0
    )
    if not data:
        _say_no_data(layout, "no request errored")
    return Figure("errors-time", "Errors per second by code", data, layout)


def concurrency_over_time_figure(report: Report) -> Figure:
    """The time-averaged number of requests in flight per interval."""
    data: list[dict[str, JsonValue]] = [
        {
            "type": "scatter",
            "mode": "lines",
            "name": step_label(step),
            "x": list(times),
            "y": list(timeline.concurrency_mean),
            "line": {"color": step_colour(step)},
            "fill": "tozeroy",
        }
        for step, timeline, times in _time_axis(report)
    ]
    return Figure(
        "concurrency-time",
        "Requests in flight over time",
        data,
        _layout("Requests in flight (time-averaged)", "seconds into the run", "requests"),
    )


def offered_rate(step: StepReport) -> float:
    """The load a step offered: its requested rate, else the rate it dispatched at."""
    if step.requested_rate is not None:
        return step.requested_rate
    return step.metrics.throughput.attempted_requests_per_s


def sweep_throughput_figure(report: Report) -> Figure:
    """Achieved throughput against the offered rate, one point per step."""
    steps = sorted(report.steps, key=offered_rate)
    x: list[JsonValue] = [offered_rate(step) for step in steps]
    text: list[JsonValue] = [step_label(step) for step in steps]
    data: list[dict[str, JsonValue]] = [
        {
            "type": "scatter",
            "mode": "lines+markers",
            "name": "attempted req/s",
            "x": x,
            "y": [step.metrics.throughput.attempted_requests_per_s for step in steps],
            "text": text,
        },
        {
            "type": "scatter",
            "mode": "lines+markers",
            "name": "usable req/s",
            "x": x,
            "y": [step.metrics.throughput.usable_requests_per_s for step in steps],
            "text": text,
        },
    ]
    if any(step.metrics.goodput is not None for step in steps):
        data.append(
            {
                "type": "scatter",
                "mode": "lines+markers",
                "name": "goodput req/s",
                "x": x,
                "y": [
                    None if step.metrics.goodput is None else step.metrics.goodput.requests_per_s
                    for step in steps
                ],
                "text": text,
            }
        )
    return Figure(
        "sweep-throughput",
        "Throughput against offered rate",
        data,
        _layout("Throughput vs offered rate", "offered rate (req/s)", "req/s"),
        "A server that keeps up stays on the diagonal; usable below attempted means errors.",
    )


def sweep_latency_figure(report: Report, metric: str, title: str) -> Figure:
    """p50 and p99 of one latency metric against the offered rate, with its SLO line."""
    steps = sorted(report.steps, key=offered_rate)
    x: list[JsonValue] = [offered_rate(step) for step in steps]
    data: list[dict[str, JsonValue]] = []
    for name, label in (("p50", "p50"), ("p99", "p99")):
        values: list[JsonValue] = []
        for step in steps:
            distribution: Distribution | None = getattr(step.metrics.latency, metric)
            values.append(None if distribution is None else float(getattr(distribution, name)))
        data.append(
            {"type": "scatter", "mode": "lines+markers", "name": label, "x": x, "y": values}
        )
    layout = _layout(f"{title} vs offered rate", "offered rate (req/s)", "ms")
    _draw_slo(layout, _slo_of(report).get(metric), axis="y")
    return Figure(f"sweep-{metric}", f"{title} against offered rate", data, layout)


def _slo_of(report: Report) -> dict[str, float]:
    """The run's latency SLOs in ms by metric name, from its config (empty when none)."""
    out: dict[str, float] = {}
    for key, value in report.run_config.slo.items():
        metric = SLO_METRICS.get(key)
        if metric is not None:
            out[metric] = value
    return out


def server_figures(report: Report) -> list[Figure]:
    """The server's own gauges and counter rates over time, when its metrics were scraped."""
    section = report.server_metrics
    if section is None or not section.series.t_s:
        return []
    series = section.series
    times: list[JsonValue] = list(series.t_s)
    queue: list[dict[str, JsonValue]] = [
        {"type": "scatter", "mode": "lines", "name": name, "x": times, "y": list(values)}
        for name, values in (
            ("running", series.requests_running),
            ("waiting", series.requests_waiting),
        )
        if any(value is not None for value in values)
    ]
    rates: list[dict[str, JsonValue]] = [
        {
            "type": "scatter",
            "mode": "lines",
            "name": "requests finished/s",
            "x": times,
            "y": list(series.requests_finished_per_s),
        },
        {
            "type": "scatter",
            "mode": "lines",
            "name": "generated tokens/s",
            "x": times,
            "y": list(series.generation_tokens_per_s),
            "yaxis": "y2",
        },
    ]
    figures = [
        Figure(
            "server-queue",
            "Server: requests running and waiting",
            queue,
            _layout("Server: requests running and waiting", "seconds into the run", "requests"),
            "As the server's own gauges reported them at each scrape.",
        ),
        Figure(
            "server-rates",
            "Server: finished requests and generated tokens per second",
            rates,
            _layout(
                "Server: finished req/s and generated tok/s",
                "seconds into the run",
                "requests/s",
                yaxis2={
                    "title": {"text": "tokens/s"},
                    "overlaying": "y",
                    "side": "right",
                    "rangemode": "tozero",
                    # Room for its tick labels and title: without it they are cut at the edge.
                    "automargin": True,
                },
            ),
            "Counter increases between consecutive scrapes.",
        ),
    ]
    if any(value is not None for value in series.kv_cache_usage):
        figures.append(
            Figure(
                "server-kv-cache",
                "Server: KV-cache usage",
                [
                    {
                        "type": "scatter",
                        "mode": "lines",
                        "name": "KV-cache usage",
                        "x": times,
                        "y": list(series.kv_cache_usage),
                    }
                ],
                _layout("Server: KV-cache usage", "seconds into the run", "fraction"),
            )
        )
    return figures


def turns_figure(report: Report) -> Figure | None:
    """Time to first token by turn of a multi-turn session (p50 solid, p99 dotted), a line pair
    per step; None when no step ran sessions. A later turn carries the conversation so far, so
    a server without prefix caching shows it here."""
    data: list[dict[str, JsonValue]] = []
    for step in report.steps:
        if not step.turns:
            continue
        turns: list[JsonValue] = list(step.turns)
        for name, dash in (("p50", "solid"), ("p99", "dot")):
            values: list[JsonValue] = []
            for metrics in step.turns.values():
                ttft = metrics.latency.ttft_ms
                values.append(None if ttft is None else float(getattr(ttft, name)))
            data.append(
                {
                    "type": "scatter",
                    "mode": "lines+markers",
                    "name": f"{name}, {step_label(step)}",
                    "x": turns,
                    "y": values,
                    "line": {"color": step_colour(step), "dash": dash},
                }
            )
    if not data:
        return None
    layout = _layout("TTFT by turn of a session", "turn", "ms")
    layout["xaxis"] = {"title": {"text": "turn"}, "automargin": True, "dtick": 1}
    return Figure(
        "turns-ttft",
        "Time to first token by turn",
        data,
        layout,
        "Each turn resends the conversation so far: TTFT that grows with the turn is prefill "
        "of the history.",
    )


def is_sweep(report: Report) -> bool:
    """Whether the run has several steps at different offered rates (a sweep or a series)."""
    return len(report.steps) > 1


def figures_of(
    report: Report, samples: Mapping[str, Mapping[str, Sequence[float]]]
) -> list[tuple[str, list[Figure]]]:
    """Every chart of the report, grouped in sections (section title, figures).

    `samples` maps a latency metric (`ttft_ms`, `e2e_ms`) to per-step lists of per-request
    values for the CDF charts; an empty mapping leaves those charts out.
    """
    sections: list[tuple[str, list[Figure]]] = [
        ("Outcomes and errors", [outcomes_figure(report), errors_figure(report)]),
        (
            "Latency distributions",
            [latency_percentiles_figure(report, metric, title) for metric, title in LATENCY_METRICS]
            + [
                cdf_figure(metric, title, samples[metric], report=report)
                for metric, title in LATENCY_METRICS
                if metric in samples
            ],
        ),
    ]
    if _time_axis(report):
        ramp = [ramp_rate_figure(report)] if has_ramp(report) else []
        sections.append(
            (
                "Over time",
                [
                    *ramp,
                    throughput_over_time_figure(report),
                    ttft_over_time_figure(report),
                    errors_over_time_figure(report),
                    concurrency_over_time_figure(report),
                ],
            )
        )
    if has_token_figures(report):
        sections.append(("Token rates, per-user speed, prefill vs decode", token_figures(report)))
    turns = turns_figure(report)
    if turns is not None:
        sections.append(("Sessions and turns", [turns]))
    server = server_figures(report)
    if server:
        sections.append(("Server metrics", server))
    if is_sweep(report):
        sections.append(
            (
                "Across steps",
                [sweep_throughput_figure(report)]
                + [
                    sweep_latency_figure(report, metric, title) for metric, title in LATENCY_METRICS
                ],
            )
        )
    return sections


# The figures peers print beside output throughput (input, total and peak token rates, time to
# second token, per-user output speed, prefill vs decode), in a section of their own.


def has_token_figures(report: Report) -> bool:
    """Whether any step has the figures of `token_figures` (reports before them have none)."""
    for step in report.steps:
        throughput, latency = step.metrics.throughput, step.metrics.latency
        if (
            throughput.usable_input_tokens_per_s is not None
            or throughput.peak_output_tokens_per_s is not None
            or throughput.per_user_output_tokens_per_s is not None
            or latency.ttst_ms is not None
            or latency.decode_ms is not None
        ):
            return True
    return False


def token_rates_figure(report: Report) -> Figure:
    """Input, output, total and peak output tokens/s per step, side by side."""
    labels: list[JsonValue] = [step_label(step) for step in report.steps]
    series: tuple[tuple[str, list[JsonValue]], ...] = (
        ("input", [s.metrics.throughput.usable_input_tokens_per_s for s in report.steps]),
        ("output", [s.metrics.throughput.usable_output_tokens_per_s for s in report.steps]),
        ("total", [s.metrics.throughput.usable_total_tokens_per_s for s in report.steps]),
        (
            "peak output (busiest second)",
            [s.metrics.throughput.peak_output_tokens_per_s for s in report.steps],
        ),
    )
    data: list[dict[str, JsonValue]] = [
        {"type": "bar", "name": name, "x": labels, "y": values} for name, values in series
    ]
    return Figure(
        "token-rates",
        "Token rates by step",
        data,
        _layout("Token rates of completed requests", "step", "tokens/s", barmode="group"),
        "Input uses the server's prompt counts (missing when a completed request had none); "
        "the peak is the fullest one-second bucket of output tokens.",
    )


def prefill_decode_figure(report: Report) -> Figure:
    """Mean TTFT and mean decode time (E2E - TTFT) of the streamed answers, stacked per step."""
    labels: list[JsonValue] = [step_label(step) for step in report.steps]
    data: list[dict[str, JsonValue]] = []
    for name, metric in (("prefill (TTFT)", "ttft_ms"), ("decode (E2E - TTFT)", "decode_ms")):
        means: list[JsonValue] = []
        for step in report.steps:
            distribution: Distribution | None = getattr(step.metrics.latency, metric)
            means.append(None if distribution is None else distribution.mean)
        data.append({"type": "bar", "name": name, "x": labels, "y": means})
    layout = _layout("Prefill vs decode, mean per answer", "step", "ms", barmode="stack")
    if all(step.metrics.latency.decode_ms is None for step in report.steps):
        _say_no_data(layout, "not measured in this run (no streamed answer)")
    return Figure(
        "prefill-decode",
        "Prefill vs decode",
        data,
        layout,
        "Of the streamed answers: time to the first token (queueing, prefill and network) and "
        "the rest of the answer after it.",
    )


def per_user_figure(report: Report) -> Figure:
    """Per-user output tokens/s (one value per answer) at its low and middle points, per step."""
    points = (("min", "min"), ("p50", "p50"), ("mean", "mean"), ("max", "max"))
    data: list[dict[str, JsonValue]] = []
    for step in report.steps:
        distribution = step.metrics.throughput.per_user_output_tokens_per_s
        if distribution is None:
            continue
        data.append(
            {
                "type": "scatter",
                "mode": "lines+markers",
                "name": step_label(step),
                "x": [label for _, label in points],
                "y": [float(getattr(distribution, name)) for name, _ in points],
            }
        )
    layout = _layout("Per-user output tokens/s", "statistic over answers", "tokens/s")
    if not data:
        _say_no_data(layout, "not measured in this run")
    return Figure(
        "per-user-output",
        "Per-user output tokens/s",
        data,
        layout,
        "Per streamed answer of 2+ tokens: (output tokens - 1) / (E2E - TTFT), the speed one "
        "user saw after the first token.",
    )


def token_figures(report: Report) -> list[Figure]:
    """The section's charts: token rates, prefill vs decode, per-user speed and TTST."""
    return [
        token_rates_figure(report),
        prefill_decode_figure(report),
        per_user_figure(report),
        latency_percentiles_figure(report, "ttst_ms", "Time to second token"),
    ]
