"""The HTTP backend: one aiohttp session per process that turns a request into a `Result`.

`resolve` never raises for anything the network or the server does: refused connections,
deadlines, error statuses, dropped connections and odd bodies all come back as
`Failure(UnusableResponse)`. Only cancellation propagates, so the worker can record it.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import socket
import ssl
import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

import aiohttp
import orjson
from pydantic import JsonValue
from returns.result import Failure, Result
from yarl import URL

from assay.backend.deadlines import DeadlineWatch
from assay.backend.faults import (
    connect_fault,
    deadline_fault,
    http_status_fault,
    interrupted_fault,
    malformed_fault,
    too_large_fault,
)
from assay.backend.received import EVENT_STREAM, cap_partial, compile_whole_body
from assay.backend.redaction import Redactor
from assay.backend.served_models import ServedModel, served_models
from assay.backend.settings import DEFAULT_REQUEST_ID_HEADER, BackendSettings
from assay.core.clock import Clock
from assay.core.diagnostics import DiagnosticCode, UnusableResponse, cap_excerpt
from assay.core.request import GenerationRequest
from assay.core.response import ID_LIMIT, ExchangeIds, GenerationResponse, SentBody
from assay.core.trusted import trusted
from assay.errors import ServerNotReady
from assay.handlers import handler_for
from assay.handlers.base import (
    EndpointHandler,
    SseEvent,
    SseFrame,
    StreamAccumulator,
    Transfer,
)
from assay.handlers.by_endpoint import encoded_body
from assay.handlers.sse import SseParser
from assay.handlers.wire import ask_continuous_usage
from assay.spec.endpoint import Endpoint

_ERROR_BODY_LIMIT = 64 * 1024
# How long the rest of a body may take after `[DONE]` or the terminal event: a server that ends
# the body at once gives the connection back to the pool; one that holds it open is cut, and its
# answer still ends at the terminal marker.
_AFTER_TERMINAL_S = 0.25
_MODELS_PATH = "/v1/models"
_USER_AGENT = "assay"
_TRACEPARENT = "traceparent"
_EVENT_STREAM_PARAMETERS = EVENT_STREAM + ";"
# The namespace of the UUIDs sent as request ids (see `wire_request_id`); fixed forever, so the
# same run sends the same ids.
_REQUEST_ID_NAMESPACE = uuid.UUID("5f0c8a52-4d1e-4b7a-9a57-2c3e6b1d8f40")
_NAMESPACE_BYTES = _REQUEST_ID_NAMESPACE.bytes


def wire_request_id(request_id: str) -> str:
    """The UUID sent in the request-id header for assay's `request_id` (a name-based UUID 5).

    Servers such as llama-cpp-python's reject ids that are not UUIDs; a name-based UUID keeps
    runs reproducible and lets a server log line be matched to its record.

    >>> wire_request_id("req-00000042")
    'f84aacf4-cebb-5a8b-949f-c956265a7d0f'
    >>> wire_request_id("req-00000042") == str(uuid.uuid5(_REQUEST_ID_NAMESPACE, "req-00000042"))
    True
    """
    # RFC 4122's name-based UUID 5 spelled out (`uuid.uuid5` builds two UUID objects and costs
    # about three times as much; this runs once per request).
    digest = bytearray(hashlib.sha1(_NAMESPACE_BYTES + request_id.encode()).digest()[:16])
    digest[6] = (digest[6] & 0x0F) | 0x50  # version 5
    digest[8] = (digest[8] & 0x3F) | 0x80  # RFC 4122 variant
    text = digest.hex()
    return f"{text[:8]}-{text[8:12]}-{text[12:16]}-{text[16:20]}-{text[20:]}"


@dataclass(slots=True)
class _Exchange:
    """How far one request got, kept outside the deadline scope for the evidence of a fault."""

    send_ns: int = 0
    # The ids of the exchange (see `ExchangeIds`): what was sent, then what the server echoed.
    sent_header: str | None = None
    sent: str | None = None
    traceparent: str | None = None
    echoed: str | None = None
    first_byte_ns: int | None = None
    http_status: int | None = None
    reason: str | None = None
    accumulator: StreamAccumulator | None = None
    terminal_ns: int | None = None
    received: list[bytes] = field(default_factory=list)

    def transfer(self, end_ns: int) -> Transfer:
        return Transfer(
            send_ns=self.send_ns,
            end_ns=end_ns,
            first_byte_ns=self.first_byte_ns,
            http_status=self.http_status or 0,
            ids=self.ids(),
        )

    def ids(self) -> ExchangeIds | None:
        """The ids sent and echoed so far; None when nothing was sent and nothing came back."""
        if self.sent is None and self.traceparent is None and self.echoed is None:
            return None
        # Strings assay made, or the echo it capped and cleaned: built without validation.
        ids: ExchangeIds = trusted(
            ExchangeIds,
            {
                "sent_header": self.sent_header,
                "sent": self.sent,
                "echoed": self.echoed,
                "answer": None,
                "traceparent": self.traceparent,
            },
        )
        return ids

    def partial(self, end_ns: int) -> GenerationResponse | None:
        accumulator = self.accumulator
        return None if accumulator is None else accumulator.partial(self.transfer(end_ns))

    def received_bytes(self) -> bytes | None:
        return b"".join(self.received) if self.received else None


class Backend:
    """Sends generation requests to one OpenAI-compatible server over a shared session.

    Open it with `open_backend`; the session, its connection pool and its DNS cache live as long
    as the `async with` block. Every credential the settings hold is redacted from what a
    request produces before anyone else sees it (see `assay.backend.redaction`).
    """

    def __init__(
        self, settings: BackendSettings, clock: Clock, session: aiohttp.ClientSession
    ) -> None:
        self.settings = settings
        self._clock = clock
        self._session = session
        self._loop = asyncio.get_running_loop()
        self._redactor = settings.redactor()
        # Parsed once: yarl URLs are immutable, and parsing per request costs a few µs.
        root = settings.request_root
        self._urls = {endpoint: URL(root + endpoint.path) for endpoint in Endpoint}
        self._id_header = settings.request_id_header
        # The header an echo is read from: the one sent, else the usual one (a server may
        # still name its own id there).
        self._echo_header = settings.request_id_header or DEFAULT_REQUEST_ID_HEADER
        self._trace = settings.trace_context

    async def resolve(
        self, request: GenerationRequest
    ) -> Result[GenerationResponse, UnusableResponse]:
        """Send `request` and compile the answer; every server or network fault is a `Failure`.

        Either way the answer (or, when there is none, the evidence) carries the exchange's ids.
        """
        exchange = _Exchange()
        result = await self._resolve(request, exchange)
        match result:
            case Failure(unusable):
                evidence = unusable.evidence
                if evidence.partial is None and evidence.ids is None:
                    ids = exchange.ids()
                    if ids is not None:
                        unusable = unusable.model_copy(
                            update={"evidence": evidence.model_copy(update={"ids": ids})}
                        )
                return Failure(cap_partial(self._redactor.scrub(unusable)))
            case _:
                return result

    async def _resolve(
        self, request: GenerationRequest, exchange: _Exchange
    ) -> Result[GenerationResponse, UnusableResponse]:
        handler = handler_for(request.endpoint)
        payload = handler.build_body(request)
        if self.settings.continuous_usage_stats:
            ask_continuous_usage(payload)
        body, content_type = encoded_body(request, payload)
        result = await self._send(request, handler, body, content_type, exchange)
        if request.images is not None or request.audio_seconds or request.audio_file:
            sent = SentBody(
                body_bytes=len(body),
                images=request.images or 0,
                audio_seconds=request.audio_seconds,
            )
            return result.map(lambda response: response.model_copy(update={"sent": sent}))
        return result

    async def _send(
        self,
        request: GenerationRequest,
        handler: EndpointHandler,
        body: bytes,
        content_type: str | None,
        exchange: _Exchange,
    ) -> Result[GenerationResponse, UnusableResponse]:
        watch = DeadlineWatch(self.settings.timeouts, self._loop)
        try:
            async with asyncio.timeout(None) as scope:
                watch.start(scope)
                try:
                    return await self._exchange(
                        request, handler, body, content_type, exchange, watch
                    )
                finally:
                    watch.stop()
        except TimeoutError:
            # Only the deadline scope raises here: `_exchange` turns aiohttp's own timeouts
            # into values before they can escape.
            accumulator = exchange.accumulator
            if accumulator is not None and accumulator.ended and not accumulator.failed:
                # A deadline that passes after the terminal marker cuts nothing of the answer.
                end_ns = exchange.terminal_ns or self._clock.now_ns()
                return accumulator.finish(exchange.transfer(end_ns))
            status = exchange.http_status
            if status is not None and not 200 <= status < 300:
                # The status is the diagnostic; a slow error body only shortens the excerpt.
                received = exchange.received_bytes() or b""
                return Failure(
                    http_status_fault(
                        status, exchange.reason, request.endpoint.path, received, self._redactor
                    )
                )
            code = watch.expired or DiagnosticCode.timeout_total
            return Failure(self._deadline_fault(code, exchange))

    def _request_headers(
        self, request: GenerationRequest, exchange: _Exchange, content_type: str | None
    ) -> dict[str, str] | None:
        """The request's own headers (its id, its trace context, the Content-Type of a body
        that is not JSON), noted on `exchange`."""
        headers: dict[str, str] | None = None
        name = self._id_header
        if name is not None:
            sent = exchange.sent = wire_request_id(request.request_id)
            exchange.sent_header = name
            headers = {name: sent}
        trace = self._trace
        if trace is not None:
            parent = exchange.traceparent = trace.traceparent(request.request_id)
            if headers is None:
                headers = {_TRACEPARENT: parent}
            else:
                headers[_TRACEPARENT] = parent
        if content_type is not None:
            # A body that is not JSON (a multipart upload) says so over the session's default.
            headers = {**(headers or {}), "Content-Type": content_type}
        return headers

    def _note_echo(self, response: aiohttp.ClientResponse, exchange: _Exchange) -> None:
        """Keep the request id the server answered with, capped and cleaned like server text."""
        echoed = response.headers.get(self._echo_header)
        if echoed is None:
            return
        try:
            echoed.encode()
        except UnicodeEncodeError:  # undecodable header bytes, kept as surrogate escapes
            echoed = echoed.encode("utf-8", "replace").decode()
        if self._redactor.active:
            echoed = self._redactor.clean(echoed)
        exchange.echoed = cap_excerpt(echoed, ID_LIMIT)

    async def _exchange(
        self,
        request: GenerationRequest,
        handler: EndpointHandler,
        body: bytes,
        content_type: str | None,
        exchange: _Exchange,
        watch: DeadlineWatch,
    ) -> Result[GenerationResponse, UnusableResponse]:
        clock = self._clock
        exchange.send_ns = clock.now_ns()
        try:
            response = await self._session.post(
                self._urls[request.endpoint],
                data=body,
                headers=self._request_headers(request, exchange, content_type),
                allow_redirects=False,
            )
        except aiohttp.ClientResponseError as error:
            # The answer arrived but its head or first body bytes cannot be read.
            return Failure(self._unreadable_fault(error, exchange))
        except aiohttp.ClientError as error:
            return Failure(self._connect_fault(error))
        except OSError as error:
            return Failure(connect_fault(f"connection failed: {error}", self._redactor))

        async with response:
            exchange.first_byte_ns = clock.now_ns()
            status = exchange.http_status = response.status
            self._note_echo(response, exchange)
            if not 200 <= status < 300:
                exchange.reason = response.reason
                # No token will come; only the idle and total deadlines bound the error body.
                watch.token_seen = True
                received = await self._read_capped(response, exchange, watch)
                return Failure(
                    http_status_fault(
                        status, response.reason, request.endpoint.path, received, self._redactor
                    )
                )
            content_type = response.headers.get("Content-Type")
            if _is_event_stream(content_type) or response.content_type == EVENT_STREAM:
                return await self._read_stream(request, handler, response, exchange, watch)
            try:
                whole = await self._read_all(response, exchange, watch)
            except (aiohttp.ClientError, OSError) as error:
                return Failure(self._read_fault(error, exchange))
            if whole is None:
                return Failure(self._too_large_fault("the body", exchange))
            watch.token_seen = True
            if self._redactor.active:
                # Before the handler reads it: no excerpt it caps can hold half a secret.
                whole = self._redactor.clean_bytes(whole)
            return compile_whole_body(
                request,
                handler,
                whole,
                content_type,
                exchange.transfer(clock.now_ns()),
                self._redactor,
            )

    async def _read_stream(
        self,
        request: GenerationRequest,
        handler: EndpointHandler,
        response: aiohttp.ClientResponse,
        exchange: _Exchange,
        watch: DeadlineWatch,
    ) -> Result[GenerationResponse, UnusableResponse]:
        clock = self._clock
        loop = self._loop
        accumulator = handler.open_accumulator(request, exchange.send_ns)
        exchange.accumulator = watch.accumulator = accumulator
        parser = SseParser()
        content = response.content
        feed = accumulator.feed
        # Secrets leave each event's data before the handler sees it (None: nothing to hide).
        clean = self._redactor.clean_bytes if self._redactor.active else None
        limit = self.settings.max_response_bytes
        size = 0
        try:
            # The hot path: per chunk one read, two clock reads and the parser's own work.
            while chunk := await content.readany():
                received_ns = clock.now_ns()
                watch.saw_bytes(loop.time())
                frames = parser.feed(chunk)
                if clean is not None:
                    frames = _scrubbed(frames, clean)
                for frame in frames:
                    feed(frame, received_ns)
                size += len(chunk)
                if size > limit:
                    # An endless stream, or one line that never ends (the parser holds it):
                    # memory stays within the limit plus one read.
                    response.close()
                    return Failure(self._too_large_fault("the event stream", exchange))
                if accumulator.failed:
                    # A fatal fault is already recorded; the rest of the stream changes nothing.
                    response.close()
                    return accumulator.finish(exchange.transfer(clock.now_ns()))
                if accumulator.ended:
                    # The answer ends at the terminal marker, whatever the server does next.
                    exchange.terminal_ns = received_ns
                    await _drain_after_terminal(response, parser, accumulator, received_ns)
                    return accumulator.finish(exchange.transfer(received_ns))
        except (aiohttp.ClientError, OSError) as error:
            return Failure(self._read_fault(error, exchange))
        end_ns = clock.now_ns()
        frames = parser.close()
        if clean is not None:
            frames = _scrubbed(frames, clean)
        for frame in frames:
            feed(frame, end_ns)
        return accumulator.finish(exchange.transfer(end_ns))

    async def _read_all(
        self, response: aiohttp.ClientResponse, exchange: _Exchange, watch: DeadlineWatch
    ) -> bytes | None:
        """The whole body, chunk by chunk so the idle deadline sees every arrival.

        None when it passes `max_response_bytes` (the connection is closed, the rest unread).
        """
        content = response.content
        received = exchange.received
        loop = self._loop
        limit = self.settings.max_response_bytes
        size = 0
        while chunk := await content.readany():
            watch.saw_bytes(loop.time())
            size += len(chunk)
            if size > limit:
                response.close()
                # Keep only the head for the excerpt: the rest is what must not pile up.
                head = received[0] if received else chunk
                received[:] = [head[:_ERROR_BODY_LIMIT]]
                return None
            received.append(chunk)
        return b"".join(received)

    async def _read_capped(
        self, response: aiohttp.ClientResponse, exchange: _Exchange, watch: DeadlineWatch
    ) -> bytes:
        """At most `_ERROR_BODY_LIMIT` bytes of an error body; a failed read keeps what came."""
        content = response.content
        received = exchange.received
        size = 0
        try:
            while size < _ERROR_BODY_LIMIT and (chunk := await content.readany()):
                watch.saw_bytes(self._loop.time())
                received.append(chunk)
                size += len(chunk)
        except (aiohttp.ClientError, OSError):
            pass  # the status alone is the diagnostic; the excerpt is best effort
        if size >= _ERROR_BODY_LIMIT or not content.at_eof():
            response.close()
        return b"".join(received)[:_ERROR_BODY_LIMIT]

    def _connect_fault(self, error: aiohttp.ClientError) -> UnusableResponse:
        base_url = self.settings.display_url
        if isinstance(error, aiohttp.ConnectionTimeoutError):
            limit = self.settings.timeouts.connect_s
            return connect_fault(
                f"could not connect to {base_url} within the connect deadline of {limit:g} s",
                self._redactor,
                code=DiagnosticCode.timeout_connect,
            )
        if isinstance(error, aiohttp.ClientConnectorCertificateError):
            return connect_fault(f"{base_url}: {tls_failure(error)}", self._redactor)
        if isinstance(error, aiohttp.ClientConnectorError):
            return connect_fault(
                f"could not connect to {base_url}: {_connect_reason(error)}", self._redactor
            )
        detail = str(error) or type(error).__name__
        return connect_fault(
            f"{base_url} closed the connection before a response: {type(error).__name__}: {detail}",
            self._redactor,
        )

    def _unreadable_fault(
        self, error: aiohttp.ClientResponseError, exchange: _Exchange
    ) -> UnusableResponse:
        """aiohttp could not parse the head or the first bytes of the body (its "400")."""
        return malformed_fault(
            DiagnosticCode.malformed_http,
            f"the response from {self.settings.display_url} cannot be read: "
            f"{_parse_problem(error)}",
            exchange.http_status,
            exchange.received_bytes(),
            exchange.partial(self._clock.now_ns()),
            self._redactor,
        )

    def _read_fault(self, error: BaseException, exchange: _Exchange) -> UnusableResponse:
        """Reading the body failed: a dropped connection, or a body that cannot be decoded."""
        end_ns = self._clock.now_ns()
        cause = error.__cause__
        status = exchange.http_status or 0
        received = exchange.received_bytes()
        partial = exchange.partial(end_ns)
        if isinstance(cause, aiohttp.http_exceptions.ContentEncodingError) or (
            isinstance(cause, aiohttp.http_exceptions.TransferEncodingError)
            and not _is_short_body(cause)
        ):
            return malformed_fault(
                DiagnosticCode.malformed_http,
                f"the body cannot be read: {_parse_problem(error)}",
                status,
                received,
                partial,
                self._redactor,
            )
        return interrupted_fault(_drop_detail(error), status, received, partial, self._redactor)

    def _too_large_fault(self, what: str, exchange: _Exchange) -> UnusableResponse:
        return too_large_fault(
            self.settings.max_response_bytes,
            what,
            exchange.http_status or 0,
            exchange.received_bytes(),
            exchange.partial(self._clock.now_ns()),
            self._redactor,
        )

    def _deadline_fault(self, code: DiagnosticCode, exchange: _Exchange) -> UnusableResponse:
        timeouts = self.settings.timeouts
        limits = {
            DiagnosticCode.timeout_first_token: timeouts.first_token_s,
            DiagnosticCode.timeout_idle: timeouts.idle_s,
            DiagnosticCode.timeout_total: timeouts.total_s,
        }
        return deadline_fault(
            code,
            limits.get(code, timeouts.total_s),
            exchange.http_status,
            exchange.received_bytes(),
            exchange.partial(self._clock.now_ns()),
            self._redactor,
        )

    async def list_models(self) -> list[str]:
        """The model ids the server lists at `/v1/models`; raises `ServerNotReady` when it can't."""
        return [model.id for model in await self.served_models()]

    async def served_models(self) -> list[ServedModel]:
        """The models the server lists at `/v1/models`, with their context windows where named;
        raises `ServerNotReady` when it can't.

        A setup step, not a benchmarked request, so faults are exceptions with a clear message
        (`ModelsStatus` when the server answered with an error status, so readiness can retry).
        """
        base_url = self.settings.display_url
        url = URL(self.settings.request_root + _MODELS_PATH)
        redactor = self._redactor
        limit = self.settings.max_response_bytes
        try:
            async with asyncio.timeout(self.settings.timeouts.first_token_s):
                async with self._session.get(url, allow_redirects=False) as response:
                    status = response.status
                    body = await _read_at_most(response.content, limit + 1)
        except aiohttp.ClientConnectorCertificateError as error:
            raise ServerNotReady(redactor.clean(f"{base_url}: {tls_failure(error)}")) from None
        except aiohttp.ClientConnectorError as error:
            raise ModelsUnreachable(
                redactor.clean(f"no server at {base_url} ({_connect_reason(error)})")
            ) from None
        except TimeoutError:
            raise ModelsUnreachable(
                f"{base_url} did not answer {_MODELS_PATH} within "
                f"{self.settings.timeouts.first_token_s:g} s"
            ) from None
        except aiohttp.ClientResponseError as error:
            raise ServerNotReady(
                redactor.clean(
                    f"{base_url} answered {_MODELS_PATH} with a response that cannot be read: "
                    f"{_parse_problem(error)}"
                )
            ) from None
        except (aiohttp.ClientError, OSError) as error:
            raise ModelsUnreachable(
                redactor.clean(f"{base_url} failed on {_MODELS_PATH}: {_drop_detail(error)}")
            ) from None
        if not 200 <= status < 300:
            raise ModelsStatus(
                status,
                redactor.clean(f"{base_url} answered {status} for {_MODELS_PATH}"),
            )
        if len(body) > limit:
            raise NotAModelList(
                f"{base_url} answered {_MODELS_PATH} with more than {limit} bytes "
                "(--max-response-bytes); that is not a model list"
            )
        return _listed_models(base_url, body, redactor)


class ModelsUnreachable(ServerNotReady):
    """Nothing answered `/v1/models`: refused, reset, or no answer within the deadline."""


class NotAModelList(ServerNotReady):
    """`/v1/models` answered 2xx with something that is not a model list."""


class ModelsStatus(ServerNotReady):
    """`/v1/models` answered with a non-2xx status; readiness decides whether to retry."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def tls_failure(error: aiohttp.ClientConnectorCertificateError) -> str:
    """What failed in the TLS handshake, and the two ways out."""
    reason = getattr(error.certificate_error, "verify_message", None) or str(
        error.certificate_error
    )
    return (
        f"certificate verify failed: {reason}; pass --ca-bundle PATH to trust the server's CA, "
        "or --insecure to skip verification"
    )


def _parse_problem(error: BaseException) -> str:
    """aiohttp's parser complaint in words, without the status 400 it wraps every one in."""
    cause = error.__cause__ if error.__cause__ is not None else error
    message = getattr(cause, "message", None) or str(cause) or type(cause).__name__
    text = " ".join(str(message).split())
    if "content-encoding" in text.lower():
        return f"{text} (assay asks for an uncompressed body and does not decode this encoding)"
    return text


def _is_short_body(cause: BaseException) -> bool:
    message = str(getattr(cause, "message", "")).lower()
    return "not enough data" in message


def _drop_detail(error: BaseException) -> str:
    """How a body read failed, in words: never aiohttp's "TransferEncodingError: 400", which
    reads like an HTTP status."""
    cause = error.__cause__
    if isinstance(cause, aiohttp.http_exceptions.ContentLengthError):
        message = str(getattr(cause, "message", "")).strip(".")
        return f"the server closed the connection before the end of the body ({message})"
    if isinstance(cause, aiohttp.http_exceptions.TransferEncodingError):
        return "the server closed the connection before the last chunk of the chunked body"
    if isinstance(error, aiohttp.ServerDisconnectedError):
        return "the server closed the connection"
    if isinstance(error, (ConnectionResetError, aiohttp.ClientOSError)):
        return f"the connection was reset ({error.strerror or error})"
    detail = str(error) or type(error).__name__
    return f"{type(error).__name__}: {detail}"


async def _read_at_most(content: aiohttp.StreamReader, limit: int) -> bytes:
    """The body up to `limit` bytes (stopping there, so a huge answer never fills memory)."""
    parts: list[bytes] = []
    size = 0
    while size < limit and (chunk := await content.readany()):
        parts.append(chunk)
        size += len(chunk)
    return b"".join(parts)


async def _drain_after_terminal(
    response: aiohttp.ClientResponse,
    parser: SseParser,
    accumulator: StreamAccumulator,
    received_ns: int,
) -> None:
    """Read what follows the terminal marker for at most `_AFTER_TERMINAL_S`.

    The accumulator counts and ignores any events in it. A body that does not end in time, or
    breaks, is cut: the answer was complete, so neither is a fault.
    """
    content = response.content
    if content.at_eof():
        # The usual case: the body ended in the read that brought the terminal marker, so
        # there is nothing to wait for and no deadline scope to open.
        for frame in parser.close():
            accumulator.feed(frame, received_ns)
        return
    try:
        async with asyncio.timeout(_AFTER_TERMINAL_S):
            while chunk := await content.readany():
                for frame in parser.feed(chunk):
                    accumulator.feed(frame, received_ns)
    except (TimeoutError, aiohttp.ClientError, OSError):
        response.close()
        return
    for frame in parser.close():
        accumulator.feed(frame, received_ns)


def _is_event_stream(content_type: str | None) -> bool:
    """The Content-Type as servers write an event stream's, read as text.

    Only a sure yes: anything else (another case, spaces) is left to aiohttp's parse, which
    costs a parse per response.

    >>> _is_event_stream("text/event-stream; charset=utf-8"), _is_event_stream("text/plain")
    (True, False)
    """
    return content_type is not None and (
        content_type == EVENT_STREAM or content_type.startswith(_EVENT_STREAM_PARAMETERS)
    )


def _scrubbed(frames: list[SseFrame], clean: Callable[[bytes], bytes]) -> list[SseFrame]:
    """`frames` with every secret masked in their data."""
    return [
        clean(frame) if isinstance(frame, bytes) else SseEvent(clean(frame.data), frame.event)
        for frame in frames
    ]


def _listed_models(base_url: str, body: bytes, redactor: Redactor) -> list[ServedModel]:
    try:
        parsed: JsonValue = orjson.loads(body)
    except orjson.JSONDecodeError:
        parsed = None
    listed = parsed.get("data") if isinstance(parsed, dict) else None
    if not isinstance(listed, list):
        raise NotAModelList(
            f"{base_url} answered {_MODELS_PATH} with something that is not a model list: "
            f"{redactor.excerpt(body, limit=200)!r}"
        )
    return served_models(listed)


def _connect_reason(error: aiohttp.ClientConnectorError) -> str:
    """ "connection refused" rather than asyncio's "Connect call failed ('127.0.0.1', 9)"; a
    host name that did not resolve says so, rather than "unknown error -2"."""
    os_error = error.os_error
    if isinstance(os_error, socket.gaierror):
        return f"host name {error.host!r} did not resolve: {os_error.strerror or os_error}"
    if os_error.errno:
        return os.strerror(os_error.errno).lower()
    return str(os_error) or type(os_error).__name__


def _session_headers(settings: BackendSettings) -> dict[str, str]:
    headers = {
        "Content-Type": "application/json",
        # Ask for no compression: decompressing every chunk costs CPU on the hot path.
        "Accept-Encoding": "identity",
        "User-Agent": _USER_AGENT,
    }
    authorization = settings.authorization()
    if authorization is not None:
        headers["Authorization"] = authorization
    # Given headers win, an explicit Authorization header included.
    headers.update(settings.headers)
    return headers


def _ssl_setting(settings: BackendSettings) -> ssl.SSLContext | bool:
    """No verification (`--insecure`), the system's CAs, or the system's plus a CA bundle."""
    if not settings.verify_tls:
        return False
    if settings.ca_bundle is None:
        return True
    context = ssl.create_default_context()
    try:
        context.load_verify_locations(cafile=settings.ca_bundle)
    except (OSError, ssl.SSLError) as error:
        raise ServerNotReady(
            f"--ca-bundle {settings.ca_bundle}: not a readable PEM certificate file ({error})"
        ) from None
    return context


@asynccontextmanager
async def open_backend(settings: BackendSettings, clock: Clock) -> AsyncIterator[Backend]:
    """Open one HTTP session (connection pool, DNS cache) for the life of the block.

    >>> import asyncio
    >>> from assay.core.clock import MonotonicClock
    >>> async def pool_size() -> int:
    ...     settings = BackendSettings(base_url="http://127.0.0.1:9", max_connections=4)
    ...     async with open_backend(settings, MonotonicClock()) as backend:
    ...         return backend.settings.max_connections
    >>> asyncio.run(pool_size())
    4
    """
    connector = aiohttp.TCPConnector(
        limit=settings.max_connections,
        limit_per_host=0,
        ttl_dns_cache=300,
        ssl=_ssl_setting(settings),
    )
    # Only the connect phase is aiohttp's to time (`sock_connect` covers new connections, not
    # waiting for a pooled one); the other deadlines are `DeadlineWatch`'s.
    timeout = aiohttp.ClientTimeout(
        total=None, connect=None, sock_connect=settings.timeouts.connect_s, sock_read=None
    )
    async with aiohttp.ClientSession(
        connector=connector,
        timeout=timeout,
        headers=_session_headers(settings),
        raise_for_status=False,
    ) as session:
        yield Backend(settings, clock, session)
