"""`/v1/embeddings`: inputs in, vectors out, summarised (count, dimension, finiteness)."""

from __future__ import annotations

import base64
import binascii
import math
import sys
from array import array
from typing import Any

from pydantic import JsonValue
from returns.result import Failure, Result

from assay.core.answer import EmbeddingSummary, Vectors
from assay.core.diagnostics import DiagnosticCode, UnusableResponse
from assay.core.request import GenerationRequest
from assay.core.response import GenerationResponse
from assay.handlers.base import Transfer
from assay.handlers.stream import NotStreamed
from assay.handlers.wire import (
    body_answer,
    body_list,
    decode_body,
    text_prompt,
    unusable,
    with_extra,
)
from assay.spec.endpoint import Endpoint


class EmbeddingsHandler:
    """Embeddings: never streamed; the vectors are checked and summarised, not kept.

    >>> request = GenerationRequest(request_id="r1", endpoint=Endpoint.embeddings, model="m",
    ...     prompt=("a", "b"))
    >>> EmbeddingsHandler().build_body(request)
    {'model': 'm', 'input': ['a', 'b']}
    """

    @property
    def endpoint(self) -> Endpoint:
        return Endpoint.embeddings

    def build_body(self, request: GenerationRequest) -> dict[str, JsonValue]:
        """Model and input (a string or a list), then extras; `stream` is never sent."""
        body: dict[str, JsonValue] = {"model": request.model, "input": text_prompt(request)}
        return with_extra(body, request)

    def compile_body(
        self, request: GenerationRequest, body: bytes, transfer: Transfer
    ) -> Result[GenerationResponse, UnusableResponse]:
        """A `list` of `embedding` objects (float lists or base64 little-endian float32)."""
        obj = decode_body(body, transfer, "embeddings")
        if isinstance(obj, UnusableResponse):
            return Failure(obj)
        data = body_list(obj, "data", body, transfer, "embeddings")
        if isinstance(data, UnusableResponse):
            return Failure(data)
        summary = summarise(data)
        if isinstance(summary, str):
            return Failure(unusable(DiagnosticCode.unexpected_shape, summary, transfer, body))
        return body_answer(request, Endpoint.embeddings, obj, transfer, Vectors(summary=summary))

    def open_accumulator(self, request: GenerationRequest, send_ns: int) -> EmbeddingsAccumulator:
        """An accumulator that reports any SSE answer as unexpected: embeddings do not stream."""
        return EmbeddingsAccumulator(request)


def summarise(data: list[object]) -> EmbeddingSummary | str:
    """The summary of an embeddings `data` list, or what is wrong with its shape.

    >>> summarise([{"embedding": [0.5, -1.0, 2.0], "index": 0}])
    EmbeddingSummary(count=1, dimension=3, all_finite=True, consistent_dimension=True)
    >>> summarise([{"embedding": "AAAAPwAAgL8=", "index": 0}]).dimension
    2
    """
    dimension: int | None = None
    consistent = True
    finite = True
    for position, item in enumerate(data):
        raw = item.get("embedding") if isinstance(item, dict) else None
        vector = _vector(raw)
        if vector is None:
            return f"embeddings body item {position} has no float list or base64 `embedding`"
        if dimension is None:
            dimension = len(vector)
        elif len(vector) != dimension:
            consistent = False
        if finite:
            try:
                finite = all(map(math.isfinite, vector))
            except TypeError:
                return f"embeddings body item {position} has a non-number in its vector"
    return EmbeddingSummary(
        count=len(data),
        dimension=dimension or 0,
        all_finite=finite,
        consistent_dimension=consistent,
    )


def _vector(raw: object) -> list[Any] | array[float] | None:
    if isinstance(raw, list):
        return raw
    if not isinstance(raw, str):
        return None
    try:
        packed = base64.b64decode(raw, validate=True)
    except (binascii.Error, ValueError):
        return None
    if len(packed) % 4:
        return None
    floats = array("f")
    floats.frombytes(packed)
    if sys.byteorder == "big":
        floats.byteswap()  # the wire format is little-endian float32
    return floats


class EmbeddingsAccumulator(NotStreamed):
    """Embeddings are never streamed (see `NotStreamed`)."""

    __slots__ = ()

    def __init__(self, request: GenerationRequest) -> None:
        super().__init__(request, "embeddings")
