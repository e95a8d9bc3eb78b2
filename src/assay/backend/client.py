"""The HTTP backend: one aiohttp session per process that turns a request into a `Result`.

`resolve` never raises for anything the network or the server does: refused connections,
deadlines, error statuses, dropped connections and odd bodies all come back as
`Failure(UnusableResponse)`. Only cancellation propagates, so the worker can record it.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

import aiohttp
import orjson
from pydantic import JsonValue
from returns.result import Failure, Result
from yarl import URL

from assay.backend.deadlines import DeadlineWatch
from assay.backend.faults import (
    Redactor,
    bad_content_type_fault,
    connect_fault,
    deadline_fault,
    http_status_fault,
    interrupted_fault,
)
from assay.backend.settings import BackendSettings
from assay.core.clock import Clock
from assay.core.diagnostics import DiagnosticCode, UnusableResponse
from assay.core.request import Endpoint, GenerationRequest
from assay.core.response import GenerationResponse
from assay.errors import ServerNotReady
from assay.handlers import handler_for
from assay.handlers.base import EndpointHandler, StreamAccumulator, Transfer
from assay.handlers.sse import SseParser
from assay.handlers.wire import ask_continuous_usage

_ERROR_BODY_LIMIT = 64 * 1024
# How long the rest of a body may take after `[DONE]` or the terminal event: a server that ends
# the body at once gives the connection back to the pool; one that holds it open is cut, and its
# answer still ends at the terminal marker.
_AFTER_TERMINAL_S = 0.25
_MODELS_PATH = "/v1/models"
_USER_AGENT = "assay"


@dataclass(slots=True)
class _Exchange:
    """How far one request got, kept outside the deadline scope for the evidence of a fault."""

    send_ns: int = 0
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
        )

    def partial(self, end_ns: int) -> GenerationResponse | None:
        accumulator = self.accumulator
        return None if accumulator is None else accumulator.partial(self.transfer(end_ns))

    def received_bytes(self) -> bytes | None:
        return b"".join(self.received) if self.received else None


class Backend:
    """Sends generation requests to one OpenAI-compatible server over a shared session.

    Open it with `open_backend`; the session, its connection pool and its DNS cache live as long
    as the `async with` block.
    """

    def __init__(
        self, settings: BackendSettings, clock: Clock, session: aiohttp.ClientSession
    ) -> None:
        self.settings = settings
        self._clock = clock
        self._session = session
        self._loop = asyncio.get_running_loop()
        secret = settings.api_key.get_secret_value() if settings.api_key is not None else None
        self._redactor = Redactor(secret)
        # Parsed once: yarl URLs are immutable, and parsing per request costs a few µs.
        self._urls = {endpoint: URL(settings.base_url + endpoint.path) for endpoint in Endpoint}

    async def resolve(
        self, request: GenerationRequest
    ) -> Result[GenerationResponse, UnusableResponse]:
        """Send `request` and compile the answer; every server or network fault is a `Failure`."""
        handler = handler_for(request.endpoint)
        payload = handler.build_body(request)
        if self.settings.continuous_usage_stats:
            ask_continuous_usage(payload)
        body = orjson.dumps(payload)
        exchange = _Exchange()
        watch = DeadlineWatch(self.settings.timeouts, self._loop)
        try:
            async with asyncio.timeout(None) as scope:
                watch.start(scope)
                try:
                    return await self._exchange(request, handler, body, exchange, watch)
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

    async def _exchange(
        self,
        request: GenerationRequest,
        handler: EndpointHandler,
        body: bytes,
        exchange: _Exchange,
        watch: DeadlineWatch,
    ) -> Result[GenerationResponse, UnusableResponse]:
        clock = self._clock
        exchange.send_ns = clock.now_ns()
        try:
            response = await self._session.post(
                self._urls[request.endpoint],
                data=body,
                headers={"X-Request-Id": request.request_id},
                allow_redirects=False,
            )
        except aiohttp.ClientError as error:
            return Failure(self._connect_fault(error))
        except OSError as error:
            return Failure(connect_fault(f"connection failed: {error}", self._redactor))

        async with response:
            exchange.first_byte_ns = clock.now_ns()
            status = exchange.http_status = response.status
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
            mime = response.content_type.lower()
            if mime == "text/event-stream":
                return await self._read_stream(request, handler, response, exchange, watch)
            try:
                received = await self._read_all(response, exchange, watch)
            except (aiohttp.ClientError, OSError) as error:
                return Failure(self._interrupted_fault(error, exchange))
            watch.token_seen = True
            if _is_json(mime, content_type, received):
                return handler.compile_body(request, received, exchange.transfer(clock.now_ns()))
            return Failure(bad_content_type_fault(status, content_type, received, self._redactor))

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
        try:
            # The hot path: per chunk one read, two clock reads and the parser's own work.
            while chunk := await content.readany():
                received_ns = clock.now_ns()
                watch.saw_bytes(loop.time())
                for event in parser.feed(chunk):
                    feed(event, received_ns)
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
            return Failure(self._interrupted_fault(error, exchange))
        end_ns = clock.now_ns()
        for event in parser.close():
            feed(event, end_ns)
        return accumulator.finish(exchange.transfer(end_ns))

    async def _read_all(
        self, response: aiohttp.ClientResponse, exchange: _Exchange, watch: DeadlineWatch
    ) -> bytes:
        """The whole body, chunk by chunk so the idle deadline sees every arrival."""
        content = response.content
        received = exchange.received
        loop = self._loop
        while chunk := await content.readany():
            watch.saw_bytes(loop.time())
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
        base_url = self.settings.base_url
        if isinstance(error, aiohttp.ConnectionTimeoutError):
            limit = self.settings.timeouts.connect_s
            return connect_fault(
                f"could not connect to {base_url} within the connect deadline of {limit:g} s",
                self._redactor,
                code=DiagnosticCode.timeout_connect,
            )
        if isinstance(error, aiohttp.ClientConnectorError):
            return connect_fault(
                f"could not connect to {base_url}: {_connect_reason(error)}", self._redactor
            )
        detail = str(error) or type(error).__name__
        return connect_fault(
            f"{base_url} closed the connection before a response: {type(error).__name__}: {detail}",
            self._redactor,
        )

    def _interrupted_fault(self, error: BaseException, exchange: _Exchange) -> UnusableResponse:
        end_ns = self._clock.now_ns()
        return interrupted_fault(
            error,
            exchange.http_status or 0,
            exchange.received_bytes(),
            exchange.partial(end_ns),
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
        """The model ids the server lists at `/v1/models`; raises `ServerNotReady` when it can't.

        A setup step, not a benchmarked request, so faults are exceptions with a clear message.
        """
        base_url = self.settings.base_url
        url = URL(base_url + _MODELS_PATH)
        try:
            async with asyncio.timeout(self.settings.timeouts.first_token_s):
                async with self._session.get(url, allow_redirects=False) as response:
                    body = await response.read()
                    status = response.status
        except aiohttp.ClientConnectorError as error:
            raise ServerNotReady(f"no server at {base_url} ({_connect_reason(error)})") from error
        except TimeoutError as error:
            raise ServerNotReady(
                f"{base_url} did not answer {_MODELS_PATH} in time ({type(error).__name__})"
            ) from error
        except (aiohttp.ClientError, OSError) as error:
            raise ServerNotReady(
                f"{base_url} failed on {_MODELS_PATH}: {type(error).__name__}: {error}"
            ) from error
        if not 200 <= status < 300:
            raise ServerNotReady(f"{base_url} answered {status} for {_MODELS_PATH}")
        return _model_ids(base_url, body, self._redactor)


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
    try:
        async with asyncio.timeout(_AFTER_TERMINAL_S):
            while chunk := await content.readany():
                for event in parser.feed(chunk):
                    accumulator.feed(event, received_ns)
    except (TimeoutError, aiohttp.ClientError, OSError):
        response.close()
        return
    for event in parser.close():
        accumulator.feed(event, received_ns)


def _model_ids(base_url: str, body: bytes, redactor: Redactor) -> list[str]:
    try:
        parsed: JsonValue = orjson.loads(body)
    except orjson.JSONDecodeError:
        parsed = None
    listed = parsed.get("data") if isinstance(parsed, dict) else None
    if not isinstance(listed, list):
        raise ServerNotReady(
            f"{base_url} answered {_MODELS_PATH} with something that is not a model list: "
            f"{redactor.excerpt(body[:200])!r}"
        )
    ids: list[str] = []
    for item in listed:
        model_id = item.get("id") if isinstance(item, dict) else None
        if isinstance(model_id, str):
            ids.append(model_id)
    return ids


def _connect_reason(error: aiohttp.ClientConnectorError) -> str:
    """ "connection refused" rather than asyncio's "Connect call failed ('127.0.0.1', 9)"."""
    os_error = error.os_error
    if os_error.errno:
        return os.strerror(os_error.errno).lower()
    return str(os_error) or type(os_error).__name__


def _is_json(mime: str, content_type: str | None, body: bytes) -> bool:
    """JSON by its content type, or a JSON-looking body under a missing or generic one.

    An empty body goes to the handler too, whatever its type: nothing at all is
    no_terminal_response, not a content-type problem.
    """
    if mime == "application/json" or mime.endswith("+json") or not body.strip():
        return True
    if mime in ("text/html", "application/xhtml+xml", "text/xml", "application/xml"):
        return False
    stripped = body.lstrip()
    return stripped[:1] in (b"{", b"[")


def _session_headers(settings: BackendSettings) -> dict[str, str]:
    headers = {
        "Content-Type": "application/json",
        # Ask for no compression: decompressing every chunk costs CPU on the hot path.
        "Accept-Encoding": "identity",
        "User-Agent": _USER_AGENT,
        **settings.headers,
    }
    if settings.api_key is not None:
        headers["Authorization"] = f"Bearer {settings.api_key.get_secret_value()}"
    return headers


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
        ssl=settings.verify_tls,
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
