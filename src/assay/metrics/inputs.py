"""What the completed requests of a step carried besides text: images, audio and body bytes.

Counted over completed requests that carried images or audio (`GenerationResponse.sent`); a
text-only step has no such figures. The upload time a body implies is its size over a 1 Gbit/s
link: a server cannot start on a request before its body has arrived, so a large body adds
that much to TTFT on such a link (loopback is far faster). TTFT is also split by the number of
images a request carried, when the step's requests carried different numbers.
"""

from __future__ import annotations

from typing import Final

from pydantic import BaseModel, ConfigDict

from assay.core.response import GenerationResponse
from assay.metrics.sketch import Distribution, QuantileSketch

_MS: Final = 1e-6
# One gigabit per second, in bytes per millisecond.
_GBIT_BYTES_PER_MS: Final = 1e9 / 8 / 1000


class Inputs(BaseModel):
    """Per-request images, audio seconds and body bytes, and TTFT by image count."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    requests: int
    images_per_request: Distribution | None = None
    audio_seconds_per_request: Distribution | None = None
    body_bytes_per_request: Distribution | None = None
    # The mean body's upload time over a 1 Gbit/s link, in ms.
    upload_ms_at_1_gbit: float = 0.0
    # TTFT (ms) of streamed requests by how many images they carried ("0", "1", ...); empty
    # when every request carried the same number.
    ttft_ms_by_images: dict[str, Distribution] = {}


class InputTally:
    """Folds the `sent` figures of completed responses; merges across processes.

    >>> from assay.core import Endpoint, ResponseTiming, SentBody
    >>> tally = InputTally()
    >>> for images in (1, 2):
    ...     tally.add(GenerationResponse(request_id="r", endpoint=Endpoint.chat, streamed=True,
    ...         timing=ResponseTiming(send_ns=0, first_token_ns=images * 10_000_000, end_ns=1),
    ...         sent=SentBody(body_bytes=125_000, images=images)))
    >>> inputs = tally.snapshot()
    >>> inputs.upload_ms_at_1_gbit, sorted(inputs.ttft_ms_by_images)
    (1.0, ['1', '2'])
    """

    __slots__ = ("_audio", "_bytes", "_images", "_ttft_by_images")

    def __init__(self) -> None:
        self._images = QuantileSketch()
        self._audio = QuantileSketch()
        self._bytes = QuantileSketch()
        self._ttft_by_images: dict[int, QuantileSketch] = {}

    def add(self, response: GenerationResponse) -> None:
        """Count one completed response; one without `sent` carried text only."""
        sent = response.sent
        if sent is None:
            return
        self._images.add(sent.images)
        self._audio.add(sent.audio_seconds)
        self._bytes.add(sent.body_bytes)
        timing = response.timing
        if response.streamed and timing.first_token_ns is not None:
            sketch = self._ttft_by_images.get(sent.images)
            if sketch is None:
                sketch = self._ttft_by_images[sent.images] = QuantileSketch()
            sketch.add(timing.first_token_ns - timing.send_ns)

    def merge(self, other: InputTally) -> None:
        """Fold `other` (the same step counted elsewhere) into this tally."""
        self._images.merge(other._images)
        self._audio.merge(other._audio)
        self._bytes.merge(other._bytes)
        for images, theirs in other._ttft_by_images.items():
            mine = self._ttft_by_images.get(images)
            if mine is None:
                mine = self._ttft_by_images[images] = QuantileSketch()
            mine.merge(theirs)

    def snapshot(self) -> Inputs | None:
        """The frozen figures, or None when no completed request carried images or audio."""
        if not self._bytes.count:
            return None
        by_images = self._ttft_by_images
        split: dict[str, Distribution] = {}
        if len(by_images) > 1:
            for images in sorted(by_images):
                summary = by_images[images].summary(_MS)
                if summary is not None:
                    split[str(images)] = summary
        return Inputs(
            requests=self._bytes.count,
            images_per_request=self._images.summary(),
            audio_seconds_per_request=self._audio.summary(),
            body_bytes_per_request=self._bytes.summary(),
            upload_ms_at_1_gbit=self._bytes.mean / _GBIT_BYTES_PER_MS,
            ttft_ms_by_images=split,
        )


__all__ = ["InputTally", "Inputs"]
