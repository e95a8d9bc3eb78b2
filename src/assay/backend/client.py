"""The HTTP backend: one aiohttp session per process that turns a request into a `Result`.

`resolve` never raises for anything the network or the server does: refused connections,
deadlines, error statuses, dropped connections and odd bodies all come back as
`Failure(UnusableResponse)`. Only cancellation propagates, so the worker can record it.
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

import aiohttp
from returns.result import Failure, Result
from yarl import URL

from assay.backend.deadlines import DeadlineWatch
from assay.backend.exchange import Exchange, wire_request_id
from assay.backend.faults import (
    connect_fault,
    deadline_fault,
    http_status_fault,
    interrupted_fault,
    malformed_fault,
    too_large_fault,
)
from assay.backend.model_list import fetch_served_models
from assay.backend.received import EVENT_STREAM, cap_partial, compile_whole_body
from assay.backend.served_models import ServedModel
from assay.backend.settings import DEFAULT_REQUEST_ID_HEADER, BackendSettings
from assay.backend.transport_errors import (
    connect_reason,
    drop_detail,
    is_short_body,
    parse_problem,
    tls_failure,
)
from assay.core.clock import Clock
from assay.core.diagnostics import DiagnosticCode, Evidence, UnusableResponse, cap_excerpt
from assay.core.request import GenerationRequest
from assay.core.response import ID_LIMIT, GenerationResponse, SentBody
from assay.errors import ServerNotReady
from assay.handlers import handler_for
from assay.handlers.base import (
    EndpointHandler,
    SseEvent,
    SseFrame,
    StreamAccumulator,
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
_USER_AGENT = "assay"
_TRACEPARENT = "traceparent"
_EVENT_STREAM_PARAMETERS = EVENT_STREAM + ";"


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
        exchange = Exchange()
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
        self, request: GenerationRequest, exchange: Exchange
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
        exchange: Exchange,
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
        self, request: GenerationRequest, exchange: Exchange, content_type: str | None
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

    def _note_echo(self, response: aiohttp.ClientResponse, exchange: Exchange) -> None:
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
        exchange: Exchange,
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
        exchange: Exchange,
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
        self, response: aiohttp.ClientResponse, exchange: Exchange, watch: DeadlineWatch
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
        self, response: aiohttp.ClientResponse, exchange: Exchange, watch: DeadlineWatch
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
                f"could not connect to {base_url}: {connect_reason(error)}", self._redactor
            )
        detail = str(error) or type(error).__name__
        return connect_fault(
            f"{base_url} closed the connection before a response: {type(error).__name__}: {detail}",
            self._redactor,
        )

    def _unreadable_fault(
        self, error: aiohttp.ClientResponseError, exchange: Exchange
    ) -> UnusableResponse:
        """aiohttp could not parse the head or the first bytes of the body (its "400")."""
        return malformed_fault(
            DiagnosticCode.malformed_http,
            f"the response from {self.settings.display_url} cannot be read: {parse_problem(error)}",
            self._evidence(exchange, exchange.http_status),
            self._redactor,
        )

    def _read_fault(self, error: BaseException, exchange: Exchange) -> UnusableResponse:
        """Reading the body failed: a dropped connection, or a body that cannot be decoded."""
        cause = error.__cause__
        evidence = self._evidence(exchange, exchange.http_status or 0)
        if isinstance(cause, aiohttp.http_exceptions.ContentEncodingError) or (
            isinstance(cause, aiohttp.http_exceptions.TransferEncodingError)
            and not is_short_body(cause)
        ):
            return malformed_fault(
                DiagnosticCode.malformed_http,
                f"the body cannot be read: {parse_problem(error)}",
                evidence,
                self._redactor,
            )
        return interrupted_fault(drop_detail(error), evidence, self._redactor)

    def _too_large_fault(self, what: str, exchange: Exchange) -> UnusableResponse:
        evidence = self._evidence(exchange, exchange.http_status or 0)
        return too_large_fault(self.settings.max_response_bytes, what, evidence)

    def _deadline_fault(self, code: DiagnosticCode, exchange: Exchange) -> UnusableResponse:
        timeouts = self.settings.timeouts
        limits = {
            DiagnosticCode.timeout_first_token: timeouts.first_token_s,
            DiagnosticCode.timeout_idle: timeouts.idle_s,
            DiagnosticCode.timeout_total: timeouts.total_s,
        }
        body_bytes = sum(len(chunk) for chunk in exchange.received)
        evidence = self._evidence(exchange, exchange.http_status)
        return deadline_fault(code, limits.get(code, timeouts.total_s), body_bytes, evidence)

    def _evidence(self, exchange: Exchange, http_status: int | None) -> Evidence:
        """How far the answer had got: `http_status`, a cleaned excerpt of what was read, and
        the partial answer."""
        return Evidence(
            http_status=http_status,
            excerpt=self._redactor.excerpt(exchange.received_bytes()),
            partial=exchange.partial(self._clock.now_ns()),
        )

    async def list_models(self) -> list[str]:
        """The model ids the server lists at `/v1/models`; raises `ServerNotReady` when it can't."""
        return [model.id for model in await self.served_models()]

    async def served_models(self) -> list[ServedModel]:
        """The models the server lists at `/v1/models`, with their context windows where named;
        raises `ServerNotReady` when it can't (see `assay.backend.model_list`)."""
        return await fetch_served_models(self._session, self.settings, self._redactor)


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
