"""The HTTP backend: assay's own HTTP/1.1 transport turns a request into a `Result`.

Requests go out as prepared bytes over a pool of kept-alive connections (`assay.h1`),
and each read of the answer goes straight to the SSE parser or the body it belongs to
(`assay.backend.answer_reader`). The side requests (the model list) go out one by one on the
same transport (`assay.h1.fetch`).

`resolve` never raises for anything the network or the server does: refused connections,
deadlines, error statuses, dropped connections and odd bodies all come back as
`Failure(UnusableResponse)`. Only cancellation propagates, so the worker can record it.
"""

from __future__ import annotations

import asyncio
import ssl
from asyncio import current_task as _current_task
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from returns.result import Failure, Result, Success

from assay.backend.answer_reader import (
    ERROR_BODY_LIMIT,
    READ_HEADERS,
    AnswerReader,
    Mode,
    Stop,
)
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
from assay.backend.received import cap_partial, compile_whole_body
from assay.backend.served_models import ServedModel
from assay.backend.settings import DEFAULT_REQUEST_ID_HEADER, BackendSettings
from assay.core.clock import Clock
from assay.core.diagnostics import DiagnosticCode, Evidence, UnusableResponse, cap_excerpt
from assay.core.request import GenerationRequest
from assay.core.response import ID_LIMIT, GenerationResponse, SentBody
from assay.errors import ServerNotReady
from assay.h1.connection import FaultKind, H1Connection, WireFault
from assay.h1.pool import ConnectFailure, H1Pool, tls_context
from assay.h1.proxy import refuse_proxy
from assay.h1.request import PreparedRequests
from assay.handlers import handler_for
from assay.handlers.base import EndpointHandler
from assay.handlers.by_endpoint import encoded_body
from assay.handlers.wire import ask_continuous_usage

# How long the rest of a body may take after `[DONE]` or the terminal event: a server that ends
# the body at once gives the connection back to the pool; one that holds it open is cut, and its
# answer still ends at the terminal marker.
_AFTER_TERMINAL_S = 0.25
_USER_AGENT = "assay"
_TRACEPARENT = "traceparent"


class Backend:
    """Sends generation requests to one OpenAI-compatible server over kept-alive connections.

    Open it with `open_backend`; the connection pool lives as long as the `async with` block.
    Every credential the settings hold is redacted from what a request produces before anyone
    else sees it (see `assay.backend.redaction`).
    """

    def __init__(
        self,
        settings: BackendSettings,
        clock: Clock,
        pool: H1Pool,
        prepared: PreparedRequests,
        tls: ssl.SSLContext | None,
    ) -> None:
        self.settings = settings
        self._clock = clock
        self._tls = tls
        self._pool = pool
        self._prepared = prepared
        self._loop = asyncio.get_running_loop()
        self._redactor = settings.redactor()
        self._id_header = settings.request_id_header
        # The header an echo is read from (heads are read with lower-case names): the one sent,
        # else the usual one (a server may still name its own id there).
        self._echo_header = (settings.request_id_header or DEFAULT_REQUEST_ID_HEADER).lower()
        self._trace = settings.trace_context

    async def resolve(
        self, request: GenerationRequest
    ) -> Result[GenerationResponse, UnusableResponse]:
        """Send `request` and compile the answer; every server or network fault is a `Failure`.

        Either way the answer (or, when there is none, the evidence) carries the exchange's ids.
        One coroutine per request: the body, the deadline scope and the exchange's outcome are
        read here, the rarer paths in plain methods.
        """
        exchange = Exchange()
        handler = handler_for(request.endpoint)
        payload = handler.build_body(request)
        if self.settings.continuous_usage_stats:
            ask_continuous_usage(payload)
        body, content_type = encoded_body(request, payload)
        watch = DeadlineWatch(self.settings.timeouts, self._loop)
        task = _current_task()
        if task is None:
            raise RuntimeError("a request is resolved inside a task")
        try:
            watch.start(task)
            try:
                result = await self._exchange(request, handler, body, content_type, exchange, watch)
            finally:
                watch.stop()
        except asyncio.CancelledError:
            if not watch.cut:
                raise  # not a deadline: the run (or a caller) cancelled the request
            result = self._timed_out(request, exchange, watch)
        except TimeoutError:
            # Not raised by the watch, which cancels; `_exchange` turns the connect deadline
            # into values before they can escape, so none is expected here either.
            result = self._timed_out(request, exchange, watch)
        if request.images is not None or request.audio_seconds or request.audio_file:
            sent = SentBody(
                body_bytes=len(body),
                images=request.images or 0,
                audio_seconds=request.audio_seconds,
            )
            result = result.map(lambda response: response.model_copy(update={"sent": sent}))
        if type(result) is Success:
            return result
        return self._failed(result, exchange)

    def _failed(
        self, result: Result[GenerationResponse, UnusableResponse], exchange: Exchange
    ) -> Result[GenerationResponse, UnusableResponse]:
        """A failure with the exchange's ids where it holds no partial answer, scrubbed."""
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

    def _timed_out(
        self, request: GenerationRequest, exchange: Exchange, watch: DeadlineWatch
    ) -> Result[GenerationResponse, UnusableResponse]:
        """The answer when the deadline scope expired: whole after all, or the deadline's
        fault (or the error status that came before it)."""
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
        self, request: GenerationRequest, exchange: Exchange
    ) -> list[tuple[str, str]] | None:
        """The request's own headers (its id, its trace context), noted on `exchange`."""
        headers: list[tuple[str, str]] | None = None
        name = self._id_header
        if name is not None:
            sent = exchange.sent = wire_request_id(request.request_id)
            exchange.sent_header = name
            headers = [(name, sent)]
        trace = self._trace
        if trace is not None:
            parent = exchange.traceparent = trace.traceparent(request.request_id)
            if headers is None:
                headers = [(_TRACEPARENT, parent)]
            else:
                headers.append((_TRACEPARENT, parent))
        return headers

    def _note_echo(self, headers: dict[str, str], exchange: Exchange) -> None:
        """Keep the request id the server answered with, capped and cleaned like server text."""
        echoed = headers.get(self._echo_header)
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
        pool = self._pool
        exchange.send_ns = self._clock.now_ns()
        data = self._prepared.build(
            request.endpoint, body, self._request_headers(request, exchange), content_type
        )
        connection = pool.take()
        if connection is None:
            try:
                connection = await pool.acquire()
            except ConnectFailure as failure:
                return Failure(self._connect_fault(failure))
        reader = AnswerReader(
            request,
            handler,
            exchange,
            watch,
            limit=self.settings.max_response_bytes,
            clean=self._redactor.clean_bytes if self._redactor.active else None,
            echo=self._note_echo,
            loop=self._loop,
        )
        try:
            await connection.request(data, reader)
            if reader.mode is Mode.stream and reader.stop is None:
                await _drain_after_terminal(connection, reader)
        except WireFault as fault:
            if reader.mode is not Mode.error:
                return Failure(self._wire_fault(fault, exchange))
            # The status is the diagnostic; a cut or unreadable error body only shortens the
            # excerpt.
        finally:
            pool.release(connection)
        return self._compiled(request, handler, reader, connection.complete)

    def _compiled(
        self,
        request: GenerationRequest,
        handler: EndpointHandler,
        reader: AnswerReader,
        complete: bool,
    ) -> Result[GenerationResponse, UnusableResponse]:
        """The answer `reader` has read: whole, cut at the terminal marker, or a fault."""
        exchange = reader.exchange
        now_ns = self._clock.now_ns()
        match reader.stop:
            case Stop.too_large:
                what = "the event stream" if reader.mode is Mode.stream else "the body"
                return Failure(self._too_large_fault(what, exchange))
            case Stop.undecodable:
                return Failure(self._malformed_fault(reader.problem, exchange))
            case None:
                pass
        match reader.mode:
            case Mode.error | Mode.waiting:
                received = (exchange.received_bytes() or b"")[:ERROR_BODY_LIMIT]
                return Failure(
                    http_status_fault(
                        exchange.http_status or 0,
                        exchange.reason,
                        request.endpoint.path,
                        received,
                        self._redactor,
                    )
                )
            case Mode.stream:
                accumulator = reader.accumulator
                assert accumulator is not None  # set with Mode.stream
                if accumulator.ended:
                    end_ns = exchange.terminal_ns or now_ns
                    reader.close_stream(end_ns)
                    return accumulator.finish(exchange.transfer(end_ns))
                if complete:
                    reader.close_stream(now_ns)
                return accumulator.finish(exchange.transfer(now_ns))
            case Mode.whole:
                whole = exchange.received_bytes() or b""
                if self._redactor.active:
                    # Before the handler reads it: no excerpt it caps can hold half a secret.
                    whole = self._redactor.clean_bytes(whole)
                return compile_whole_body(
                    request,
                    handler,
                    whole,
                    reader.content_type,
                    exchange.transfer(now_ns),
                    self._redactor,
                )

    def _connect_fault(self, failure: ConnectFailure) -> UnusableResponse:
        base_url = self.settings.display_url
        if failure.timed_out:
            limit = self.settings.timeouts.connect_s
            return connect_fault(
                f"could not connect to {base_url} within the connect deadline of {limit:g} s",
                self._redactor,
                code=DiagnosticCode.timeout_connect,
            )
        if failure.tls:
            return connect_fault(
                f"{base_url}: {failure.reason}; pass --ca-bundle PATH to trust the server's CA, "
                "or --insecure to skip verification",
                self._redactor,
            )
        return connect_fault(f"could not connect to {base_url}: {failure.reason}", self._redactor)

    def _wire_fault(self, fault: WireFault, exchange: Exchange) -> UnusableResponse:
        """The connection or the framing failed: before a response, in its head, in its body."""
        match fault.kind:
            case FaultKind.closed_before_response:
                return connect_fault(
                    f"{self.settings.display_url} closed the connection before a response: "
                    f"{fault.detail}",
                    self._redactor,
                )
            case FaultKind.unreadable_head:
                return self._malformed_fault(
                    f"the response from {self.settings.display_url} cannot be read: {fault.detail}",
                    exchange,
                )
            case FaultKind.unreadable_body:
                return self._malformed_fault(f"the body cannot be read: {fault.detail}", exchange)
            case FaultKind.cut_body:
                evidence = self._evidence(exchange, exchange.http_status or 0)
                return interrupted_fault(fault.detail, evidence, self._redactor)

    def _malformed_fault(self, detail: str, exchange: Exchange) -> UnusableResponse:
        return malformed_fault(
            DiagnosticCode.malformed_http,
            detail,
            self._evidence(exchange, exchange.http_status),
            self._redactor,
        )

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
        return await fetch_served_models(
            self.settings, self._redactor, _session_headers(self.settings), self._tls
        )


async def _drain_after_terminal(connection: H1Connection, reader: AnswerReader) -> None:
    """After the terminal marker, wait at most `_AFTER_TERMINAL_S` for the body's end.

    The accumulator counts and ignores any events in it. A body that does not end in time, or
    breaks, is cut (the connection is closed, not pooled): the answer was complete, so neither
    is a fault.
    """
    accumulator = reader.accumulator
    if connection.complete or accumulator is None or not accumulator.ended:
        # The usual case: the body ended in the read that brought the terminal marker.
        return
    try:
        async with asyncio.timeout(_AFTER_TERMINAL_S):
            await connection.until_complete()
    except (TimeoutError, WireFault):
        connection.close()


def _session_headers(settings: BackendSettings) -> dict[str, str]:
    headers = {
        "Accept": "*/*",
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
    """Open the connection pool of the requests for the life of the block.

    >>> import asyncio
    >>> from assay.core.clock import MonotonicClock
    >>> async def pool_size() -> int:
    ...     settings = BackendSettings(base_url="http://127.0.0.1:9", max_connections=4)
    ...     async with open_backend(settings, MonotonicClock()) as backend:
    ...         return backend.settings.max_connections
    >>> asyncio.run(pool_size())
    4
    """
    refuse_proxy(settings.request_root, settings.display_url)
    setting = _ssl_setting(settings)  # a bad --ca-bundle is refused whatever the scheme
    tls = tls_context(setting) if settings.request_root.startswith("https:") else None
    prepared = PreparedRequests(settings.request_root, _session_headers(settings))
    pool = H1Pool(
        prepared.host,
        prepared.port,
        tls,
        limit=settings.max_connections,
        connect_s=settings.timeouts.connect_s,
        now_ns=clock.now_ns,
        headers=frozenset(
            name.lower().encode()
            for name in (*READ_HEADERS, settings.request_id_header or DEFAULT_REQUEST_ID_HEADER)
        ),
    )
    try:
        yield Backend(settings, clock, pool, prepared, tls)
    finally:
        pool.close()
