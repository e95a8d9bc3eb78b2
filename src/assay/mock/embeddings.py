"""`/v1/embeddings` answers: deterministic unit vectors (the same text, the same vector).

Vectors come from a hash of the text, not a model, so they are stable across runs and processes
and cost microseconds. `encoding_format: "base64"` (the openai SDK's default) is little-endian
float32, as the OpenAI API sends it.
"""

from __future__ import annotations

import base64
import hashlib
import math
import struct
from array import array
from typing import Any

import orjson

from assay.mock.asks import EmbeddingAsk
from assay.mock.faults import FaultSpec
from assay.mock.script import BodyScript, error_object, faulted_body


def embedding_vector(text: str, dimension: int) -> list[float]:
    """A unit vector determined by `text` alone.

    >>> v = embedding_vector("hello", 8)
    >>> len(v), round(sum(x * x for x in v), 6), v == embedding_vector("hello", 8)
    (8, 1.0, True)
    """
    words = array("I", hashlib.shake_256(text.encode()).digest(4 * dimension))
    values = [w / 2147483648.0 - 1.0 for w in words]
    norm = math.sqrt(sum(x * x for x in values)) or 1.0
    return [x / norm for x in values]


def embeddings_body(
    ask: EmbeddingAsk, dimension: int, fault: FaultSpec | None, answer_id: str
) -> BodyScript:
    """The embeddings answer of one request, with `fault` applied; `answer_id` is its `id`."""
    name = fault.name if fault is not None else None
    match name:
        case "inband_error":
            error = error_object("embedding failure (injected by the mock)", "server_error", 500)
            return BodyScript(body=orjson.dumps({"error": error}))
        case "invalid_json":
            return BodyScript(body=b'{"object": "list", "data": [{"object": "embedding", "embe')
        case _:
            pass  # vectors, below
    dimension = ask.dimensions or dimension
    data: list[dict[str, Any]] = []
    if name != "empty_embedding":
        for index, text in enumerate(ask.inputs):
            vector = embedding_vector(text, dimension)
            encoded: list[float] | str = (
                base64.b64encode(struct.pack(f"<{dimension}f", *vector)).decode()
                if ask.base64
                else vector
            )
            data.append({"object": "embedding", "embedding": encoded, "index": index})
    payload: dict[str, Any] = {
        "id": answer_id,
        "object": "list",
        "data": data,
        "model": ask.model,
        "usage": {"prompt_tokens": ask.prompt_tokens, "total_tokens": ask.prompt_tokens},
    }
    if name == "unexpected_shape":
        payload["vectors"] = payload.pop("data")
    return faulted_body(orjson.dumps(payload), fault)


__all__ = ["embedding_vector", "embeddings_body"]
