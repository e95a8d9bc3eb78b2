"""The console's words for what a step's requests carried besides text (images, audio, bytes)."""

from __future__ import annotations

from typing import Final

from assay.metrics.inputs import Inputs

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


__all__ = ["input_lines", "kib"]
