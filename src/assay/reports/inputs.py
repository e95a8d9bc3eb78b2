"""What a step's requests carried besides text (images, audio, the request body's size) and
TTFT by the number of images: the console's lines and report.html's inputs section, the figures
report.json keeps (issue 38 item 12). Nothing for a run of text requests."""

from __future__ import annotations

import html
from typing import Final

from assay.metrics.inputs import Inputs
from assay.metrics.sketch import Distribution
from assay.reports.report import Report
from assay.reports.step_words import step_label

# A body whose upload at 1 Gbit/s takes less than this is not worth a word.
_UPLOAD_WORTH_SAYING_MS: Final = 1.0


def input_lines(inputs: Inputs | None) -> list[str]:
    """One line of images, audio and body size per request, one of TTFT by image count.

    >>> from assay.metrics.sketch import QuantileSketch
    >>> sketch = QuantileSketch()
    >>> sketch.add(2)
    >>> size = QuantileSketch()
    >>> size.add(500_000)
    >>> input_lines(Inputs(requests=1, images_per_request=sketch.summary(),
    ...     body_bytes_per_request=size.summary(), upload_ms_at_1_gbit=4.0))
    ['Inputs: 2.0 images per request; request body 488 KiB (mean), 4.0 ms to upload at 1 Gbit/s']
    """
    if inputs is None:
        return []
    media: list[str] = []
    images = inputs.images_per_request
    if images is not None and images.max > 0:
        media.append(f"{images.mean:.1f} images")
    audio = inputs.audio_seconds_per_request
    if audio is not None and audio.max > 0:
        media.append(f"{audio.mean:.1f} s of audio")
    line = f"Inputs: {' and '.join(media) or 'media'} per request"
    body = inputs.body_bytes_per_request
    if body is not None:
        line += f"; request body {kib(body.mean)} (mean)"
        if inputs.upload_ms_at_1_gbit >= _UPLOAD_WORTH_SAYING_MS:
            line += f", {inputs.upload_ms_at_1_gbit:.1f} ms to upload at 1 Gbit/s"
    lines = [line]
    if inputs.ttft_ms_by_images:
        split = "; ".join(
            f"{count} image{'' if count == '1' else 's'}: p50 {ttft.p50:.1f} ms (n={ttft.count})"
            for count, ttft in inputs.ttft_ms_by_images.items()
        )
        lines.append(f"TTFT by images per request: {split}")
    return lines


def kib(size: float) -> str:
    """A size in bytes as KiB, or MiB from one MiB up."""
    if size < 1024:
        return f"{size:.0f} B"
    if size >= 1024 * 1024:
        return f"{size / (1024 * 1024):.1f} MiB"
    return f"{size / 1024:.0f} KiB"


def inputs_html(report: Report) -> str:
    """The inputs table, one row per step that carried media, and TTFT by image count; "" when
    no step's requests carried any."""
    rows = [
        _row(step_label(step), inputs)
        for step in report.steps
        if (inputs := step.metrics.inputs) is not None and _carries_media(inputs)
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


def _row(label: str, inputs: Inputs) -> str:
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


__all__ = ["input_lines", "inputs_html", "kib"]
