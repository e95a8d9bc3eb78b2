"""What the HTML report shows of a run: the figures and cards its endpoint produces, nothing else
(issue 38 item 11). A rerank or score run produces documents scored, not tokens: its report
leads with documents/s and has no token cards or token charts; a chart with nothing to draw (no
request errored, a latency the endpoint does not have) is left out rather than drawn as an
empty frame."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from pydantic import JsonValue

from assay.reports.chart_base import Figure
from assay.reports.report import Report
from assay.reports.step_words import MIN_RATE_WINDOW_S
from assay.spec.endpoint import Answer

# The keys of a plotly trace that hold its points.
_POINT_KEYS = ("x", "y", "values", "z")


def produces_tokens(report: Report) -> bool:
    """Whether the run's endpoint answers with generated text (so with output tokens).

    >>> from assay.spec.run import RunEcho
    >>> from datetime import UTC, datetime
    >>> from assay.reports.report import build_report
    >>> now = datetime(2026, 1, 1, tzinfo=UTC)
    >>> def of(endpoint: str) -> Report:
    ...     echo = RunEcho.model_validate({"endpoint": endpoint})
    ...     return build_report(run_config=echo, steps=[], started_at=now, finished_at=now,
    ...                         max_error_rate=0.05)
    >>> [produces_tokens(of(name)) for name in ("chat", "rerank", "embeddings")]
    [True, False, False]
    """
    return report.run_config.endpoint.traits.generates


def scores_documents(report: Report) -> bool:
    """Whether the run's endpoint scores documents (rerank, score)."""
    return report.run_config.endpoint.traits.answer is Answer.scores


def has_points(figure: Figure) -> bool:
    """Whether a figure draws anything: a trace with at least one point that is not None."""
    for trace in figure.data:
        for key in _POINT_KEYS:
            values = trace.get(key)
            if isinstance(values, list) and any(value is not None for value in values):
                return True
    return False


def shown_sections(
    sections: Sequence[tuple[str, list[Figure]]],
) -> list[tuple[str, list[Figure]]]:
    """`sections` without the figures that draw nothing, and without sections left empty."""
    kept = [
        (title, [figure for figure in figures if has_points(figure)]) for title, figures in sections
    ]
    return [(title, figures) for title, figures in kept if figures]


def header_cards(report: Report, cards: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """The header cards for the run's endpoint: on rerank and score the documents scored and
    documents/s (the figure the console leads with) in place of the output-token card; no
    rate on a run too short for one (the console says so too).

    >>> from assay.spec.run import RunEcho
    >>> from datetime import UTC, datetime
    >>> from assay.reports.report import build_report
    >>> now = datetime(2026, 1, 1, tzinfo=UTC)
    >>> report = build_report(run_config=RunEcho.model_validate({"endpoint": "rerank"}),
    ...     steps=[], started_at=now, finished_at=now, max_error_rate=0.05)
    >>> [name for name, _ in header_cards(report, [("completed", "1"),
    ...     ("usable output tokens", "0")])]
    ['completed', 'documents scored', 'documents/s']
    """
    duration = sum(step.metrics.throughput.duration_s for step in report.steps)
    # A run too short for a rate shows none, as the console does.
    shown = [
        (name, "-" if name.endswith("/s") and duration < MIN_RATE_WINDOW_S else value)
        for name, value in cards
        if produces_tokens(report) or name != "usable output tokens"
    ]
    if scores_documents(report):
        documents = sum(step.metrics.throughput.usable_documents for step in report.steps)
        rate = "-" if duration < MIN_RATE_WINDOW_S else f"{documents / duration:,.1f}"
        at = next((i + 1 for i, (name, _) in enumerate(shown) if name == "completed"), len(shown))
        shown[at:at] = [("documents scored", f"{documents:,}"), ("documents/s", rate)]
    return shown


__all__ = ["has_points", "header_cards", "produces_tokens", "scores_documents", "shown_sections"]


def config_shown(written: Mapping[str, JsonValue]) -> dict[str, JsonValue]:
    """The run's settings as the configuration table shows them: a concurrency sweep's
    `concurrency` is the levels it swept ("1,4,16"), not only the largest of them (issue 38
    item 13: `concurrency 16` read as one level of 16).

    >>> config_shown({"concurrency": 16, "sweep_concurrency": [1, 4, 16]})["concurrency"]
    '1,4,16 (swept; at most 16 in flight)'
    >>> config_shown({"concurrency": 8, "sweep_concurrency": []})["concurrency"]
    8
    """
    shown = dict(written)
    levels = written.get("sweep_concurrency")
    if isinstance(levels, list) and levels:
        swept = ",".join(str(level) for level in levels)
        shown["concurrency"] = f"{swept} (swept; at most {written.get('concurrency')} in flight)"
    return shown
