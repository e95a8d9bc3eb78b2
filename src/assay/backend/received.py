"""What the backend makes of an answer's bytes: one decision for a live exchange and for bytes
captured elsewhere (a proxy log, a saved stream), so both give the same `Result`.

A non-2xx status is the diagnostic whatever the body; a 2xx answer is read by its media type:
an event stream by the endpoint's accumulator, a JSON (or JSON-looking, or empty) body by the
endpoint's handler, anything else is `bad_content_type`.
"""

from __future__ import annotations

from http import HTTPStatus
from typing import Final

from returns.result import Failure, Result, Success

from assay.backend.faults import bad_content_type_fault, http_status_fault
from assay.backend.redaction import Redactor
from assay.core.answer import TextAnswer
from assay.core.diagnostics import UnusableResponse, cap_excerpt
from assay.core.outcome import outcome
from assay.core.request import GenerationRequest
from assay.core.response import GenerationResponse
from assay.handlers import handler_for
from assay.handlers.base import EndpointHandler, Transfer
from assay.handlers.sse import SseParser

EVENT_STREAM: Final = "text/event-stream"
# What a response without a Content-Type is taken for (RFC 9110).
_NO_CONTENT_TYPE: Final = "application/octet-stream"
# What the evidence of a failed request keeps of a partial answer's text: enough to see what
# went wrong, never the megabytes of an endless stream.
PARTIAL_TEXT_LIMIT: Final = 16 * 1024
_NOTHING_TO_HIDE: Final = Redactor(())


def media_type(content_type: str | None) -> str:
    """The media type of a Content-Type header: lower case, without parameters; anything but
    one `type/subtype` is taken for no type at all (as Python's `email` package reads it).

    >>> media_type("Text/Event-Stream; charset=utf-8")
    'text/event-stream'
    >>> media_type(None), media_type("text/event-stream, text/html")
    ('application/octet-stream', 'application/octet-stream')
    """
    if content_type is None:
        return _NO_CONTENT_TYPE
    mime = content_type.partition(";")[0].strip().lower()
    return mime if mime.count("/") == 1 else _NO_CONTENT_TYPE


def is_json(mime: str, content_type: str | None, body: bytes) -> bool:
    """JSON by its media type, or a JSON-looking body under a missing or generic one.

    An empty body goes to the handler too, whatever its type: nothing at all is
    no_terminal_response, not a content-type problem.

    >>> is_json("text/plain", "text/plain", b' {"choices": []}')
    True
    >>> is_json("text/html", "text/html", b"{}")
    False
    """
    if mime == "application/json" or mime.endswith("+json") or not body.strip():
        return True
    if mime in ("text/html", "application/xhtml+xml", "text/xml", "application/xml"):
        return False
    stripped = body.lstrip()
    return stripped[:1] in (b"{", b"[")


def compile_whole_body(
    request: GenerationRequest,
    handler: EndpointHandler,
    body: bytes,
    content_type: str | None,
    transfer: Transfer,
    redactor: Redactor,
) -> Result[GenerationResponse, UnusableResponse]:
    """A complete 2xx body that is not an event stream: compiled by the handler when it is
    JSON, else `bad_content_type`."""
    if is_json(media_type(content_type), content_type, body):
        return handler.compile_body(request, body, transfer)
    return Failure(bad_content_type_fault(transfer.http_status, content_type, body, redactor))


def compile_received(
    request: GenerationRequest, body: bytes, content_type: str | None, status: int = 200
) -> Result[GenerationResponse, UnusableResponse]:
    """What `Backend.resolve` gives for `request` when the server answers `status` with `body`
    under `content_type`, for bytes that are already here (no deadline, no size cap applies;
    every event counts as arriving at time 0).

    >>> from assay.core import Endpoint
    >>> ask = GenerationRequest(request_id="r1", endpoint=Endpoint.chat, model="m", prompt="hi")
    >>> compile_received(ask, b"<html>Bad gateway</html>", "text/html").failure().code
    <DiagnosticCode.bad_content_type: 'bad_content_type'>
    """
    transfer = Transfer(send_ns=0, end_ns=0, first_byte_ns=0, http_status=status)
    if not 200 <= status < 300:
        return Failure(
            http_status_fault(
                status, _reason(status), request.endpoint.path, body, _NOTHING_TO_HIDE
            )
        )
    handler = handler_for(request.endpoint)
    if media_type(content_type) == EVENT_STREAM:
        accumulator = handler.open_accumulator(request, transfer.send_ns)
        parser = SseParser()
        # Events after a fault or the terminal marker are ignored by the accumulator (and those
        # after the marker counted), exactly as when they arrive in a live stream.
        accumulator.feed_all([*parser.feed(body), *parser.close()], transfer.end_ns)
        result = accumulator.finish(transfer)
    else:
        result = compile_whole_body(
            request, handler, body, content_type, transfer, _NOTHING_TO_HIDE
        )
    match outcome(result):
        case Failure(unusable):
            return Failure(cap_partial(unusable))
        case Success():
            return result


def _reason(status: int) -> str | None:
    """The standard reason phrase of `status` (a live answer carries the server's own)."""
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return None


def cap_partial(unusable: UnusableResponse) -> UnusableResponse:
    """The failure with its partial answer's text cut to `PARTIAL_TEXT_LIMIT` characters."""
    evidence = unusable.evidence
    partial = evidence.partial
    if partial is None:
        return unusable
    match partial.answer:
        case TextAnswer(text=text, reasoning=reasoning) as answer:
            if len(text) <= PARTIAL_TEXT_LIMIT and len(reasoning) <= PARTIAL_TEXT_LIMIT:
                return unusable
            cut = answer.model_copy(
                update={
                    "text": cap_excerpt(text, PARTIAL_TEXT_LIMIT) or "",
                    "reasoning": cap_excerpt(reasoning, PARTIAL_TEXT_LIMIT) or "",
                }
            )
        case _:
            return unusable  # no text to cut
    capped = partial.model_copy(update={"answer": cut})
    return unusable.model_copy(update={"evidence": evidence.model_copy(update={"partial": capped})})
