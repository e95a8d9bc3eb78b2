"""What every chart of the HTML report shares: the `Figure` specification, the colours, the
step labels, the layout and the SLO line."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from pydantic import JsonValue

from assay.metrics.sketch import PERCENTILES
from assay.reports.report import Report, StepReport
from assay.reports.step_words import step_label as step_label  # the charts' name for a step
from assay.spec.validation import SLO_KEYS

# Each kept percentile's field and its label: "p999" is drawn as "p99.9".
PERCENTILE_FIELDS: tuple[tuple[str, str], ...] = tuple(
    (name, f"p{q * 100:g}") for name, q in PERCENTILES
)
LATENCY_METRICS: tuple[tuple[str, str], ...] = (
    ("ttft_ms", "Time to first token"),
    ("itl_ms", "Inter-token latency"),
    ("tpot_ms", "Time per output token"),
    ("e2e_ms", "End-to-end latency"),
)
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


def scatter(
    mode: str, name: str, x: Sequence[JsonValue], y: Sequence[JsonValue], **extra: JsonValue
) -> dict[str, JsonValue]:
    """A scatter trace (`mode` "lines" or "lines+markers") named `name`, with `extra` keys."""
    return {"type": "scatter", "mode": mode, "name": name, "x": list(x), "y": list(y), **extra}


def step_colour(step: StepReport) -> str:
    """The colour of `step` on every chart."""
    return STEP_COLOURS[step.index % len(STEP_COLOURS)]


def chart_layout(
    title: str, x_title: str, y_title: str, **extra: JsonValue
) -> dict[str, JsonValue]:
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


def say_no_data(layout: dict[str, JsonValue], text: str) -> None:
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


def draw_slo(layout: dict[str, JsonValue], slo: float | None, axis: str) -> None:
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


def slo_of(report: Report) -> dict[str, float]:
    """The run's latency SLOs in ms by metric name, from its config (empty when none): each
    `--slo` key is the name of the latency metric it bounds."""
    return {key: value for key, value in report.run_config.slo.items() if key in SLO_KEYS}


# Plotly draws its toolbar (the modebar) in the top right corner of every chart, about 30 px
# tall, over whatever is there when the pointer is on the chart. A title is put below it.
MODEBAR_CLEARANCE_PX = 32


def clear_of_modebar(layout: JsonValue) -> JsonValue:
    """`layout` with its title moved down below the toolbar's strip and the top margin grown
    to match, so the toolbar never sits on the title however long it is.

    >>> moved = clear_of_modebar({"title": {"text": "TTFT"}, "margin": {"t": 48, "r": 16}})
    >>> moved["title"]["pad"], moved["title"]["yanchor"], moved["margin"]
    ({'t': 32}, 'top', {'t': 80, 'r': 16})
    >>> clear_of_modebar({"height": 300})
    {'height': 300}
    """
    if not isinstance(layout, dict):
        return layout
    moved = dict(layout)
    title = layout.get("title")
    if not isinstance(title, dict):
        return moved
    margin = layout.get("margin")
    margin = dict(margin) if isinstance(margin, dict) else {}
    top = margin.get("t")
    margin["t"] = (top if isinstance(top, int) else 80) + MODEBAR_CLEARANCE_PX
    moved["margin"] = margin
    moved["title"] = {
        **title,
        "yref": "container",
        "y": 1,
        "yanchor": "top",
        "pad": {"t": MODEBAR_CLEARANCE_PX},
    }
    return moved
