"""Judging an answer captured outside a run: bytes in, the `Result` a live run would record.

The bytes go through the backend's own reading of an answer (`compile_received`: status, media
type, handler or SSE accumulator) and then through `judge`, the function `assay run` and
`assay revalidate` decide with, so a captured answer cannot be judged any other way.
"""

from __future__ import annotations

from returns.result import Failure, Result, Success

from assay.backend.received import compile_received
from assay.core.diagnostics import UnusableResponse
from assay.core.request import GenerationRequest
from assay.core.response import GenerationResponse
from assay.core.trusted import trusted
from assay.records.record import Completed, Errored
from assay.spec.endpoint import Carries, Endpoint
from assay.validators.chain import Validator
from assay.validators.defaults import default_chain
from assay.worker.judge import judge

CAPTURED_REQUEST_ID = "captured"


_NO_AUDIO_KEPT = b"(the uploaded audio is not part of a capture)"


def judge_bytes(
    endpoint: Endpoint,
    body: bytes,
    content_type: str | None,
    *,
    validate: Validator[GenerationResponse] | None = None,
    request: GenerationRequest | None = None,
    status: int = 200,
) -> Result[GenerationResponse, UnusableResponse]:
    """The verdict on a captured answer of `endpoint`: `Success(response)` when a run would
    count it as completed, else `Failure` with the diagnostic the run would record.

    `content_type` picks the reader as on the wire: `text/event-stream` is an SSE stream, a JSON
    type (or a JSON-looking body) a whole body. `validate` replaces the endpoint's default
    chain. `request` is what was asked (its token limit, JSON mode, embedding inputs and `n` are
    what validators compare against); without it the answer is judged as one to a plain
    request that set none of them. `status` is the HTTP status the answer came with.

    >>> body = b'{"choices": [{"message": {"content": "Hello"}, "finish_reason": "stop"}]}'
    >>> judge_bytes(Endpoint.chat, body, "application/json").unwrap().text
    'Hello'
    >>> stream = (b'data: {"choices": [{"delta": {"content": "Hel"}}]}\\n\\n'
    ...           b'data: {"choices": [{"delta": {"content": "lo"}}]}\\n\\n')
    >>> judge_bytes(Endpoint.chat, stream, "text/event-stream").failure().code
    <DiagnosticCode.truncated_stream: 'truncated_stream'>
    """
    if request is None:
        request = captured_request(endpoint)
    elif request.endpoint is not endpoint:
        raise ValueError(
            f"request {request.request_id!r} is for the {request.endpoint.value} endpoint, "
            f"not {endpoint.value}"
        )
    answer = compile_received(request, body, content_type, status)
    match judge(answer, default_chain(endpoint) if validate is None else validate):
        case Completed(response=response):
            return Success(response)
        case Errored(diagnostic=problem):
            return Failure(problem)


def captured_request(endpoint: Endpoint) -> GenerationRequest:
    """The plain request a captured answer is judged against when none is given: no token
    limit, no JSON mode, one input, one choice; for rerank and score, documents of an unknown
    count (an answer is then checked for results, repeated indices and finite scores, not for
    its count or the documents' range).

    >>> captured_request(Endpoint.embeddings).echo().expected_embeddings
    1
    >>> captured_request(Endpoint.rerank).echo().documents is None
    True
    """
    match endpoint.traits.carries:
        case Carries.documents:
            # Built unvalidated: a request to send must hold its documents, a stand-in for an
            # answer captured without its request cannot know them.
            return trusted(
                GenerationRequest,
                {
                    "request_id": CAPTURED_REQUEST_ID,
                    "endpoint": endpoint,
                    "model": CAPTURED_REQUEST_ID,
                    "prompt": "",
                    "messages": None,
                    "documents": None,
                    "max_output_tokens": None,
                    "ignore_eos": False,
                    "stream": False,
                    "prompt_tokens": None,
                    "extra_body": {},
                    "images": None,
                    "audio_seconds": 0.0,
                    "audio_file": None,
                },
            )
        case Carries.messages | Carries.prompt | Carries.inputs | Carries.audio:
            pass
    return GenerationRequest(
        request_id=CAPTURED_REQUEST_ID,
        endpoint=endpoint,
        model=CAPTURED_REQUEST_ID,
        prompt="",
        stream=False,
        # An upload is what such a request is; the capture holds the answer, not the audio.
        audio_file=_NO_AUDIO_KEPT if endpoint.traits.needs_audio else None,
    )
