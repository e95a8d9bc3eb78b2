"""report.html's inputs section: what a step's requests carried besides text (images, audio,
the request body's size) and TTFT by the number of images, the figures the console prints and
report.json keeps (issue 38 item 12). Nothing for a run of text requests."""

from __future__ import annotations

import html

from assay.metrics.inputs import Inputs
from assay.metrics.sketch import Distribution
from assay.reports.input_lines import kib
from assay.reports.report import Report
from assay.reports.step_words import step_label


def inputs_html(report: Report) -> str:
    """The inputs table, one row per step that carried media, and TTFT by image count; "" when
    no step's requests carried any."""
    rows = [
        _row(step_label(step), step.metrics.inputs)
        for step in report.steps
        if step.metrics.inputs is not None and _carries_media(step.metrics.inputs)
    ]
    if not rows:
        return ""
    return (
        "<h2>Inputs</h2>"
        '<p class="muted">What each request carried besides text, over every request sent '
        "(min / mean / max); the upload time is the body's size at 1 Gbit/s. TTFT by images "
        "per request counts completed requests only.</p>"
        "<table><tr><th>step</th><th>images per request</th><th>audio s per request</th>"
        "<th>request body</th><th>upload at 1 Gbit/s</th><th>TTFT p50 by images per request</th>"
        f"</tr>{''.join(rows)}</table>"
    )


def _carries_media(inputs: Inputs) -> bool:
    return any(
        figure is not None and figure.max > 0
        for figure in (inputs.images_per_request, inputs.audio_seconds_per_request)
    )


def _row(label: str, inputs: Inputs | None) -> str:
    assert inputs is not None  # the caller filtered
    body = inputs.body_bytes_per_request
    by_images = "; ".join(
        f"{count} image{'' if count == '1' else 's'}: {ttft.p50:,.1f} ms (n={ttft.count})"
        for count, ttft in inputs.ttft_ms_by_images.items()
    )
    cells = [
        _spread(inputs.images_per_request, "{:.0f}", "{:.1f}"),
        _spread(inputs.audio_seconds_per_request, "{:.1f}", "{:.1f}"),
        "n/a" if body is None else f"{kib(body.min)} / {kib(body.mean)} / {kib(body.max)}",
        "n/a" if body is None else f"{inputs.upload_ms_at_1_gbit:.1f} ms",
        by_images or "n/a",
    ]
    return (
        f"<tr><td>{html.escape(label)}</td>"
        + "".join(f'<td class="num">{html.escape(cell)}</td>' for cell in cells)
        + "</tr>"
    )


def _spread(figure: Distribution | None, whole: str, mean: str) -> str:
    """min / mean / max, or "none" when the step's requests carried none of it."""
    if figure is None or figure.max <= 0:
        return "none"
    return f"{whole.format(figure.min)} / {mean.format(figure.mean)} / {whole.format(figure.max)}"


__all__ = ["inputs_html"]
