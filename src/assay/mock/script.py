"""What the mock will write for one request, decided before the first byte goes out.

Answer builders produce a script (bytes and how the exchange ends); the server plays it with the
latency plan. Keeping "what" apart from "when" lets one writer serve every endpoint and fault.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any

import orjson

from assay.mock.faults import FaultSpec

SSE_CONTENT_TYPE = "text/event-stream"
JSON_CONTENT_TYPE = "application/json"
DONE_FRAME = b"data: [DONE]\n\n"


class Ending(StrEnum):
    """How the exchange ends after the scripted bytes."""

    end = "end"  # a clean end of the body
    drop = "drop"  # the connection is aborted: the client sees an interrupted body
    stall = "stall"  # nothing more is sent for `stall_seconds`, then a clean end


@dataclass(frozen=True, slots=True)
class Answer:
    """The planned answer to one generation request, before it is put into an endpoint's shape."""

    response_id: str
    created: int
    model: str
    pieces: list[str]
    finish_reason: str  # "stop" or "length"
    prompt_tokens: int
    include_usage: bool = False
    continuous_usage: bool = False
    tool_name: str | None = None
    # The arguments' one-token pieces when the answer is a (valid) tool call instead of text.
    tool_pieces: list[str] | None = None

    @property
    def text(self) -> str:
        """The whole output text."""
        return "".join(self.pieces)


@dataclass(slots=True)
class StreamScript:
    """An SSE answer: frames before the first token, one frame per token, frames after."""

    head: list[bytes]
    tokens: list[bytes]
    tail: list[bytes]
    ending: Ending = Ending.end
    stall_seconds: float = 0.0


@dataclass(slots=True)
class BodyScript:
    """A whole JSON body; with a drop or stall ending only the first half is sent."""

    body: bytes
    ending: Ending = Ending.end
    stall_seconds: float = 0.0


def fault_ending(fault: FaultSpec | None) -> Ending:
    """How an answer under `fault` ends: as `drop` and `stall` say, any other cleanly.

    >>> fault_ending(FaultSpec("drop")), fault_ending(FaultSpec("inband_error"))
    (<Ending.drop: 'drop'>, <Ending.end: 'end'>)
    """
    if fault is not None and fault.name in ("drop", "stall"):
        return Ending(fault.name)
    return Ending.end


def faulted_body(body: bytes, fault: FaultSpec | None) -> BodyScript:
    """A whole-body answer that ends as `fault` says (half of it, then a drop or a stall)."""
    seconds = fault.seconds if fault is not None else 0.0
    return BodyScript(body=body, ending=fault_ending(fault), stall_seconds=seconds)


def data_frame(payload: Any) -> bytes:
    """One SSE `data:` frame of compact JSON.

    >>> data_frame({"a": 1})
    b'data: {"a":1}\\n\\n'
    """
    return b"data: " + orjson.dumps(payload) + b"\n\n"


def event_frame(event: str, payload: Any) -> bytes:
    """One SSE frame with an `event:` line.

    >>> event_frame("error", {"type": "error"})
    b'event: error\\ndata: {"type":"error"}\\n\\n'
    """
    return b"event: " + event.encode() + b"\ndata: " + orjson.dumps(payload) + b"\n\n"


def error_object(message: str, kind: str, code: int | str) -> dict[str, Any]:
    """An OpenAI-style error object, as vLLM and the OpenAI API send it."""
    return {"message": message, "type": kind, "param": None, "code": code}


def usage_object(prompt_tokens: int, completion_tokens: int) -> dict[str, int]:
    """Chat/completions usage."""
    return {
        "prompt_tokens": prompt_tokens,
        "total_tokens": prompt_tokens + completion_tokens,
        "completion_tokens": completion_tokens,
    }


def stalled(script: StreamScript, after: int, seconds: float) -> StreamScript:
    """`script` with a pause of `seconds` after `after` tokens; the rest follows the pause."""
    cut = min(after, len(script.tokens))
    return StreamScript(
        head=script.head,
        tokens=script.tokens[:cut],
        tail=[*script.tokens[cut:], *script.tail],
        ending=Ending.stall,
        stall_seconds=seconds,
    )


def understated(completion_tokens: int) -> int:
    """The `wrong_usage` fault's count: half, rounded down, and at least one less when possible.

    >>> understated(16), understated(1), understated(0)
    (8, 0, 0)
    """
    return max(0, min(completion_tokens // 2, completion_tokens - 1))


__all__ = [
    "Answer",
    "DONE_FRAME",
    "JSON_CONTENT_TYPE",
    "SSE_CONTENT_TYPE",
    "BodyScript",
    "Ending",
    "StreamScript",
    "data_frame",
    "error_object",
    "event_frame",
    "fault_ending",
    "faulted_body",
    "stalled",
    "understated",
    "usage_object",
]
