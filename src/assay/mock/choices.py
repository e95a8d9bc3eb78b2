"""Chat and completions answers in vLLM's wire shape, streamed or whole, with their faults.

A stream is a role chunk (chat), one chunk per token with `finish_reason` on the last one, a
usage-only chunk (`choices: []`) when `include_usage` was asked, then `data: [DONE]`. Token chunks
are built from pre-encoded byte templates: this is the throughput benchmarks' hot path.
"""

from __future__ import annotations

from typing import Any

import orjson

from assay.mock.faults import CUT_FAULTS, FaultSpec
from assay.mock.per_endpoint import answer_id
from assay.mock.script import (
    DONE_FRAME,
    Answer,
    BodyScript,
    StreamScript,
    data_frame,
    error_object,
    event_frame,
    fault_ending,
    faulted_body,
    stalled,
    understated,
    usage_object,
)
from assay.spec.endpoint import Endpoint

# Not JSON: a tool call's arguments as a careless model writes them (unquoted, unclosed).
BAD_TOOL_ARGUMENTS = '{"city": Paris, "unit": celsius'
_MIDSTREAM_ERROR = error_object(
    "engine failure during generation (injected by the mock)", "InternalServerError", 500
)


# The `object` of a streamed chunk; a transcription streams chat-like deltas.
_CHUNK_OBJECTS = {
    Endpoint.chat: "chat.completion.chunk",
    Endpoint.completions: "text_completion",
    Endpoint.transcriptions: "transcription.chunk",
}


class _ChunkWriter:
    """Byte templates for the chunks of one streamed answer."""

    def __init__(self, api: Endpoint, answer: Answer) -> None:
        self._api = api
        self._answer = answer
        self._prefix = (
            f'data: {{"id":"{answer_id(api, answer.response_id)}","object":"{_CHUNK_OBJECTS[api]}",'
            f'"created":{answer.created},"model":'
        ).encode() + orjson.dumps(answer.model)
        self._choice = self._prefix + b',"choices":[{"index":0,'

    def role(self) -> bytes:
        return self._choice + (
            b'"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]'
            + self._running_usage(0)
            + b"}\n\n"
        )

    def token(self, index: int, piece: str, finish_reason: str | None) -> bytes:
        content = orjson.dumps(piece)
        reason = b"null" if finish_reason is None else orjson.dumps(finish_reason)
        if self._api is not Endpoint.completions:
            body = b'"delta":{"content":' + content + b'},"logprobs":null,"finish_reason":'
        else:
            body = b'"text":' + content + b',"logprobs":null,"finish_reason":'
        return self._choice + body + reason + b"}]" + self._running_usage(index + 1) + b"}\n\n"

    def finish_only(self, finish_reason: str | None, completion_tokens: int) -> bytes:
        """The closing chunk of an answer with no token chunk to carry `finish_reason`."""
        return self.token(completion_tokens - 1, "", finish_reason)

    def usage(self, completion_tokens: int) -> bytes:
        usage = orjson.dumps(usage_object(self._answer.prompt_tokens, completion_tokens))
        return self._prefix + b',"choices":[],"usage":' + usage + b"}\n\n"

    def tool_call(self, index: int, piece: str, first: bool) -> bytes:
        call: dict[str, Any] = {"index": 0, "function": {"arguments": piece}}
        if first:
            call = {
                "index": 0,
                "id": f"call_{self._answer.response_id}",
                "type": "function",
                "function": {"name": self._answer.tool_name or "get_weather", "arguments": piece},
            }
        delta = orjson.dumps({"tool_calls": [call]})
        return (
            self._choice
            + b'"delta":'
            + delta
            + b',"logprobs":null,"finish_reason":null}]'
            + self._running_usage(index + 1)
            + b"}\n\n"
        )

    def _running_usage(self, completion_tokens: int) -> bytes:
        if not self._answer.continuous_usage:
            return b""
        usage = usage_object(self._answer.prompt_tokens, completion_tokens)
        return b',"usage":' + orjson.dumps(usage)


def choices_stream(
    api: Endpoint, answer: Answer, fault: FaultSpec | None, tool_pieces: list[str]
) -> StreamScript:
    """The SSE script of a chat, completions or transcription answer, with `fault` applied."""
    writer = _ChunkWriter(api, answer)
    name = fault.name if fault is not None else None
    head = [writer.role()] if api is Endpoint.chat else []
    if fault is not None and name == "stall":
        return stalled(choices_stream(api, answer, None, tool_pieces), fault.after, fault.seconds)
    if fault is not None and name in CUT_FAULTS:
        return _cut_stream(writer, head, answer, fault)
    match name:
        case "empty_stream":
            return StreamScript(head=[], tokens=[], tail=[DONE_FRAME])
        case "choices_empty":
            return StreamScript(
                head=[], tokens=[], tail=[b'data: {"choices":[],"usage":{}}\n\n', DONE_FRAME]
            )
        case "unexpected_shape":
            frames = [
                data_frame({"id": answer.response_id, "model": answer.model, "output": p})
                for p in answer.pieces
            ]
            return StreamScript(head=[], tokens=frames, tail=[DONE_FRAME])
        case "invalid_tool_call" if api is Endpoint.chat:
            return _tool_call_stream(writer, head, answer, tool_pieces, "tool_calls")
        case None if api is Endpoint.chat and answer.tool_pieces is not None:
            return _tool_call_stream(writer, head, answer, answer.tool_pieces, answer.finish_reason)
        case _:
            return _whole_stream(writer, head, answer, name)


def _cut_stream(
    writer: _ChunkWriter, head: list[bytes], answer: Answer, fault: FaultSpec
) -> StreamScript:
    """The answer's first `fault.after` tokens, then the fault's own ending."""
    cut = min(fault.after, len(answer.pieces))
    return StreamScript(
        head=head,
        tokens=[writer.token(i, answer.pieces[i], None) for i in range(cut)],
        tail=_fault_tail(fault.name, answer),
        ending=fault_ending(fault),
    )


def _whole_stream(
    writer: _ChunkWriter, head: list[bytes], answer: Answer, name: str | None
) -> StreamScript:
    """Every token of the answer, with what `missing_finish_reason`, `wrong_usage` and
    `missing_done` change at its end."""
    pieces = answer.pieces
    n = len(pieces)
    last_reason = None if name == "missing_finish_reason" else answer.finish_reason
    tokens = [writer.token(i, pieces[i], None) for i in range(n - 1)]
    if n:
        tokens.append(writer.token(n - 1, pieces[n - 1], last_reason))
    tail: list[bytes] = [] if n else [writer.finish_only(last_reason, 0)]
    if answer.include_usage or name == "wrong_usage":
        tail.append(writer.usage(understated(n) if name == "wrong_usage" else n))
    if name != "missing_done":
        tail.append(DONE_FRAME)
    return StreamScript(head=head, tokens=tokens, tail=tail)


def _tool_call_stream(
    writer: _ChunkWriter, head: list[bytes], answer: Answer, pieces: list[str], finish_reason: str
) -> StreamScript:
    frames = [writer.tool_call(i, piece, first=i == 0) for i, piece in enumerate(pieces)]
    closing = [writer.finish_only(finish_reason, len(pieces))]
    if answer.include_usage:
        closing.append(writer.usage(len(pieces)))
    return StreamScript(head=head, tokens=frames, tail=[*closing, DONE_FRAME])


def _fault_tail(name: str, answer: Answer) -> list[bytes]:
    match name:
        case "inband_error":
            return [data_frame({"error": _MIDSTREAM_ERROR}), DONE_FRAME]
        case "sse_error_event":
            return [event_frame("error", {"error": _MIDSTREAM_ERROR})]
        case "invalid_json":
            return [f'data: {{"id": "{answer.response_id}", "choices": [{{"index": 0,\n\n'.encode()]
        case _:
            return []


def choices_body(
    api: Endpoint, answer: Answer, fault: FaultSpec | None, tool_pieces: list[str]
) -> BodyScript:
    """The whole-body answer of a chat or completions request, with `fault` applied."""
    name = fault.name if fault is not None else None
    n = len(answer.pieces)
    text = answer.text
    finish_reason: str | None = answer.finish_reason
    completion_tokens = n
    match name:
        case "empty_stream":
            text, completion_tokens, finish_reason = "", 0, "stop"
        case "choices_empty":
            return BodyScript(body=b'{"choices":[],"usage":{}}')
        case "inband_error":
            return BodyScript(body=orjson.dumps({"error": _MIDSTREAM_ERROR}))
        case "invalid_json":
            return BodyScript(body=f'{{"id": "{answer.response_id}", "choices": [{{"ind'.encode())
        case "missing_finish_reason":
            finish_reason = None
        case "wrong_usage":
            completion_tokens = understated(n)
        case _:
            pass
    choice: dict[str, Any] = {"index": 0, "logprobs": None, "finish_reason": finish_reason}
    if api is Endpoint.chat:
        message: dict[str, Any] = {"role": "assistant", "content": text, "tool_calls": []}
        called = tool_pieces if name == "invalid_tool_call" else None
        if name is None and answer.tool_pieces is not None:
            called = answer.tool_pieces
        if called is not None:
            message["content"] = None
            message["tool_calls"] = [
                {
                    "id": f"call_{answer.response_id}",
                    "type": "function",
                    "function": {
                        "name": answer.tool_name or "get_weather",
                        "arguments": "".join(called),
                    },
                }
            ]
            choice["finish_reason"] = (
                "tool_calls" if name == "invalid_tool_call" else answer.finish_reason
            )
            completion_tokens = len(called)
        choice["message"] = message
    else:
        choice["text"] = text
    payload: dict[str, Any] = {
        "id": answer_id(api, answer.response_id),
        "object": "chat.completion" if api is Endpoint.chat else "text_completion",
        "created": answer.created,
        "model": answer.model,
        "choices": [choice],
        "usage": usage_object(answer.prompt_tokens, completion_tokens),
    }
    if name == "unexpected_shape":
        del payload["choices"]
        payload["output"] = text
    return faulted_body(orjson.dumps(payload), fault)


__all__ = ["BAD_TOOL_ARGUMENTS", "choices_body", "choices_stream"]
