"""report.html's capacity section: goodput and each SLO's figure against the offered load, the
passes and fails marked, the capacity and its bracket drawn (read from report.json alone)."""

from __future__ import annotations

from pydantic import JsonValue

from assay.metrics.sketch import PERCENTILES, Distribution
from assay.reports.capacity import CapacityLevel, CapacityReport
from assay.reports.chart_base import SLO_COLOUR, Figure, chart_layout, scatter
from assay.reports.report import Report, StepReport

_VERDICT_COLOURS = {"pass": "#2e7d32", "fail": "#c62828", "undecided": "#9e9e9e"}
# A load that failed only in steps whose client could not keep up: no claim on the server.
_CLIENT_BOUND_COLOUR = "#f9a825"


def capacity_sections(report: Report) -> list[tuple[str, list[Figure]]]:
    """The page's capacity section, first; none for a run that searched nothing."""
    capacity = report.capacity
    if capacity is None or not capacity.levels:
        return []
    figures = [goodput_figure(report, capacity)]
    figures += [slo_figure(report, capacity, position) for position in range(len(capacity.slos))]
    return [("Capacity", figures)]


def _last_step(report: Report, level: CapacityLevel) -> StepReport | None:
    indices = set(level.steps)
    found = [step for step in report.steps if step.index in indices]
    return found[-1] if found else None


def _bracket(layout: dict[str, JsonValue], capacity: CapacityReport) -> None:
    """The capacity as a solid line, the first fail as a dashed one, the bracket shaded."""
    shapes: list[JsonValue] = []
    annotations: list[JsonValue] = []
    low, high = capacity.capacity, capacity.first_fail
    if low is not None and high is not None:
        shapes.append(
            {
                "type": "rect",
                "yref": "paper",
                "y0": 0,
                "y1": 1,
                "x0": low,
                "x1": high,
                "fillcolor": "#fff3e0",
                "line": {"width": 0},
                "layer": "below",
            }
        )
    for value, dash, text in ((low, "solid", "capacity"), (high, "dash", "first fail")):
        if value is None:
            continue
        shapes.append(
            {
                "type": "line",
                "yref": "paper",
                "y0": 0,
                "y1": 1,
                "x0": value,
                "x1": value,
                "line": {"color": "#ef6c00", "dash": dash},
            }
        )
        annotations.append(
            {
                "text": f"{text} {value:g}",
                "showarrow": False,
                "yref": "paper",
                "y": 1,
                "x": value,
                "xanchor": "right" if dash == "solid" else "left",
                "yanchor": "bottom",
                "font": {"color": "#ef6c00"},
            }
        )
    layout["shapes"] = [*_list(layout.get("shapes")), *shapes]
    layout["annotations"] = [*_list(layout.get("annotations")), *annotations]


def _list(value: JsonValue) -> list[JsonValue]:
    return list(value) if isinstance(value, list) else []


def _colour(level: CapacityLevel) -> str:
    if level.client_bound and level.verdict != "pass":
        return _CLIENT_BOUND_COLOUR
    return _VERDICT_COLOURS[level.verdict]


def _markers(levels: list[CapacityLevel]) -> dict[str, JsonValue]:
    return {
        "size": 10,
        "color": [_colour(level) for level in levels],
        "line": {"width": 1, "color": "#333333"},
    }


def _key(levels: list[CapacityLevel]) -> str:
    """The marker colours' key, amber named only when a load is drawn in it."""
    amber = any(_colour(level) == _CLIENT_BOUND_COLOUR for level in levels)
    client = ", amber: client-bound, not judged" if amber else ""
    return f"green: pass, red: fail{client}, grey: undecided"


def goodput_figure(report: Report, capacity: CapacityReport) -> Figure:
    """Goodput (requests meeting every limit) and usable throughput at each load offered."""
    levels = sorted(capacity.levels, key=lambda level: level.level)
    stepped = [(level, _last_step(report, level)) for level in levels]
    shown = [(level, step) for level, step in stepped if step is not None]
    x: list[JsonValue] = [level.level for level, _ in shown]
    goodput: list[JsonValue] = [
        None if step.metrics.goodput is None else step.metrics.goodput.requests_per_s
        for _, step in shown
    ]
    usable: list[JsonValue] = [step.metrics.throughput.usable_requests_per_s for _, step in shown]
    data = [
        scatter("lines", "usable req/s", x, usable, line={"color": "#90a4ae", "dash": "dot"}),
        scatter(
            "lines+markers",
            f"goodput req/s ({_key([level for level, _ in shown])})",
            x,
            goodput,
            line={"color": "#1f77b4"},
            marker=_markers([level for level, _ in shown]),
        ),
    ]
    layout = chart_layout(
        "Goodput against offered load", f"offered load ({capacity.unit})", "requests/s"
    )
    _bracket(layout, capacity)
    caption = (
        "Each point is a load the search offered (its last step when it was lengthened); the "
        "shaded band is the bracket [capacity, first fail]."
    )
    return Figure("capacity-goodput", "Goodput against offered load", data, layout, caption)


def _kept_field(percentile: float) -> tuple[float, str]:
    """The kept percentile nearest to `percentile` (a p97 SLO is drawn against p95 or p99).

    >>> _kept_field(97.0), _kept_field(99.5), _kept_field(99.0)
    ((95.0, 'p95'), (99.9, 'p999'), (99.0, 'p99'))
    """
    name, q = min(PERCENTILES, key=lambda kept: abs(kept[1] * 100 - percentile))
    return q * 100, name


def slo_figure(report: Report, capacity: CapacityReport, position: int) -> Figure:
    """SLO `position`'s figure at its percentile (over completed requests) and its miss
    fraction (over attempted ones, what decides) against the load, with the limit."""
    text = capacity.slos[position]
    figure, _, rest = text.partition("=")
    limit_text, _, percentile_text = rest.partition("@p")
    limit, percentile = float(limit_text), float(percentile_text)
    kept, field = _kept_field(percentile)
    levels = sorted(capacity.levels, key=lambda level: level.level)
    x: list[JsonValue] = []
    values: list[JsonValue] = []
    misses: list[JsonValue] = []
    for level in levels:
        step = _last_step(report, level)
        distribution: Distribution | None = (
            None if step is None else getattr(step.metrics.latency, figure, None)
        )
        x.append(level.level)
        values.append(
            float(getattr(distribution, field))
            if distribution is not None and distribution.count
            else None
        )
        verdict = level.slos[position]
        misses.append(100 * verdict.missed / level.attempted if level.attempted else None)
    data = [
        scatter(
            "lines+markers",
            f"{figure} p{kept:g} of completed (ms; {_key(levels)})",
            x,
            values,
            line={"color": "#1f77b4"},
            marker=_markers(levels),
        ),
        scatter(
            "lines+markers",
            "missed, % of attempted",
            x,
            misses,
            yaxis="y2",
            line={"color": "#8c564b", "dash": "dot"},
        ),
    ]
    layout = chart_layout(f"{text} against offered load", f"offered load ({capacity.unit})", "ms")
    layout["yaxis2"] = {
        "title": {"text": "% of attempted requests that missed"},
        "overlaying": "y",
        "side": "right",
        "rangemode": "tozero",
        "automargin": True,
    }
    allowed = 100 - percentile
    layout["shapes"] = [
        _horizontal(limit, "y", SLO_COLOUR),
        _horizontal(allowed, "y2", "#8c564b"),
    ]
    layout["annotations"] = [
        _label(f"limit {limit:g} ms", limit, "y", SLO_COLOUR),
        _label(f"allowed {allowed:.3g} % missed", allowed, "y2", "#8c564b"),
    ]
    _bracket(layout, capacity)
    caption = (
        f"The verdict counts every attempted request (errored, cancelled and unsent ones miss); "
        f"the p{kept:g} line is over completed requests only."
    )
    return Figure(f"capacity-slo-{position}", f"{text} against offered load", data, layout, caption)


def _horizontal(value: float, axis: str, colour: str) -> JsonValue:
    return {
        "type": "line",
        "xref": "paper",
        "x0": 0,
        "x1": 1,
        "yref": axis,
        "y0": value,
        "y1": value,
        "line": {"color": colour, "dash": "dash"},
    }


def _label(text: str, value: float, axis: str, colour: str) -> JsonValue:
    return {
        "text": text,
        "showarrow": False,
        "xref": "paper",
        "x": 0 if axis == "y" else 1,
        "xanchor": "left" if axis == "y" else "right",
        "yref": axis,
        "y": value,
        "yanchor": "bottom",
        "font": {"color": colour},
    }


__all__ = ["capacity_sections", "goodput_figure", "slo_figure"]
