"""`/v1/responses` answers: the typed event stream (with `event:` lines and `sequence_number`) or
the whole response object, with their faults.

A cut answer has `status: "incomplete"` and `incomplete_details.reason: "max_output_tokens"`;
the stream ends with `response.completed` carrying the final response and its usage, as vLLM's.
"""

from __future__ import annotations

from typing import Any

import orjson

from assay.mock.faults import CUT_FAULTS, FaultSpec
from assay.mock.per_endpoint import answer_id
from assay.mock.script import (
    Answer,
    BodyScript,
    StreamScript,
    error_object,
    event_frame,
    fault_ending,
    faulted_body,
    stalled,
    understated,
)
from assay.spec.endpoint import Endpoint


class _Response:
    """The response object of one answer at each stage of its life."""

    def __init__(self, answer: Answer, max_output_tokens: int | None) -> None:
        self.answer = answer
        self.item_id = f"msg_{answer.response_id}"
        self.id = answer_id(Endpoint.responses, answer.response_id)
        self._base: dict[str, Any] = {
            "id": self.id,
            "object": "response",
            "created_at": answer.created,
            "model": answer.model,
            "error": None,
            "instructions": None,
            "max_output_tokens": max_output_tokens,
            "metadata": {},
            "parallel_tool_calls": True,
            "temperature": 1.0,
            "text": {"format": {"type": "text"}},
            "tool_choice": "auto",
            "tools": [],
            "top_p": 1.0,
            "truncation": "disabled",
        }

    def in_progress(self) -> dict[str, Any]:
        return {
            **self._base,
            "status": "in_progress",
            "output": [],
            "usage": None,
            "incomplete_details": None,
        }

    def message(self, text: str, status: str = "completed") -> dict[str, Any]:
        return {
            "id": self.item_id,
            "type": "message",
            "status": status,
            "role": "assistant",
            "content": []
            if status == "in_progress"
            else [{"type": "output_text", "text": text, "annotations": []}],
        }

    def final(self, text: str | None, output_tokens: int, reported_tokens: int) -> dict[str, Any]:
        """The finished response; `text=None` means no output item at all."""
        incomplete = self.answer.finish_reason == "length" and output_tokens > 0
        return {
            **self._base,
            "status": "incomplete" if incomplete else "completed",
            "output": [] if text is None else [self.message(text)],
            "usage": {
                "input_tokens": self.answer.prompt_tokens,
                "input_tokens_details": {"cached_tokens": 0},
                "output_tokens": reported_tokens,
                "output_tokens_details": {"reasoning_tokens": 0},
                "total_tokens": self.answer.prompt_tokens + reported_tokens,
            },
            "incomplete_details": {"reason": "max_output_tokens"} if incomplete else None,
        }


class _Events:
    """Numbers the frames of one stream."""

    def __init__(self) -> None:
        self._sequence = 0

    def frame(self, event: str, payload: dict[str, Any]) -> bytes:
        framed = event_frame(event, {"type": event, "sequence_number": self._sequence, **payload})
        self._sequence += 1
        return framed


def responses_stream(
    answer: Answer, max_output_tokens: int | None, fault: FaultSpec | None
) -> StreamScript:
    """The typed event stream of one answer, with `fault` applied."""
    name = fault.name if fault is not None else None
    if fault is not None and name == "stall":
        whole = responses_stream(answer, max_output_tokens, None)
        return stalled(whole, fault.after, fault.seconds)
    response = _Response(answer, max_output_tokens)
    events = _Events()
    pieces = answer.pieces
    if name == "unexpected_shape":
        # Typed events are objects; a JSON array is valid JSON in no event's shape.
        frames = [event_frame("response.output_text.delta", [p]) for p in pieces]
        return StreamScript(head=[], tokens=frames, tail=[])
    head = [
        events.frame("response.created", {"response": response.in_progress()}),
        events.frame("response.in_progress", {"response": response.in_progress()}),
    ]
    if name == "empty_stream":
        completed = response.final(None, 0, 0)
        return StreamScript(
            head=head, tokens=[], tail=[events.frame("response.completed", {"response": completed})]
        )
    where = {"item_id": response.item_id, "output_index": 0, "content_index": 0}
    head += [
        events.frame(
            "response.output_item.added",
            {"output_index": 0, "item": response.message("", status="in_progress")},
        ),
        events.frame(
            "response.content_part.added",
            {**where, "part": {"type": "output_text", "text": "", "annotations": []}},
        ),
    ]
    cut = min(fault.after, len(pieces)) if fault and fault.name in CUT_FAULTS else len(pieces)
    tokens = [
        events.frame("response.output_text.delta", {**where, "delta": p, "logprobs": []})
        for p in pieces[:cut]
    ]
    match name:
        case "inband_error":
            failed = {
                **response.in_progress(),
                "status": "failed",
                "error": {"code": "server_error", "message": "engine failure (injected)"},
            }
            return StreamScript(
                head=head,
                tokens=tokens,
                tail=[events.frame("response.failed", {"response": failed})],
            )
        case "sse_error_event":
            error = {"code": "server_error", "message": "engine failure (injected)", "param": None}
            return StreamScript(head=head, tokens=tokens, tail=[events.frame("error", error)])
        case "invalid_json":
            broken = b'event: response.output_text.delta\ndata: {"type": "response.output_te\n\n'
            return StreamScript(head=head, tokens=tokens, tail=[broken])
        case "truncated_stream" | "drop":
            return StreamScript(head=head, tokens=tokens, tail=[], ending=fault_ending(fault))
        case _:
            pass  # the whole answer, below
    text = answer.text
    n = len(pieces)
    reported = understated(n) if name == "wrong_usage" else n
    part = {"type": "output_text", "text": text, "annotations": []}
    tail = [
        events.frame("response.output_text.done", {**where, "text": text, "logprobs": []}),
        events.frame("response.content_part.done", {**where, "part": part}),
        events.frame(
            "response.output_item.done", {"output_index": 0, "item": response.message(text)}
        ),
        events.frame("response.completed", {"response": response.final(text, n, reported)}),
    ]
    return StreamScript(head=head, tokens=tokens, tail=tail)


def responses_body(
    answer: Answer, max_output_tokens: int | None, fault: FaultSpec | None
) -> BodyScript:
    """The whole response object of one answer, with `fault` applied."""
    name = fault.name if fault is not None else None
    response = _Response(answer, max_output_tokens)
    n = len(answer.pieces)
    match name:
        case "empty_stream":
            return BodyScript(body=orjson.dumps(response.final("", 0, 0)))
        case "inband_error":
            error = error_object("engine failure (injected by the mock)", "server_error", 500)
            return BodyScript(body=orjson.dumps({"error": error}))
        case "invalid_json":
            return BodyScript(body=f'{{"id": "{response.id}", "outp'.encode())
        case "unexpected_shape":
            payload = {
                "id": response.id,
                "object": "response",
                "text": answer.text,
            }
            return BodyScript(body=orjson.dumps(payload))
        case _:
            pass  # the whole answer, below
    reported = understated(n) if name == "wrong_usage" else n
    return faulted_body(orjson.dumps(response.final(answer.text, n, reported)), fault)


__all__ = ["responses_body", "responses_stream"]
