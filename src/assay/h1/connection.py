"""One kept-alive HTTP/1.1 client connection: an `asyncio.Protocol` that reads with llhttp.

The response is handed on as it arrives, by calls rather than awaits: the head once
(`ResponseReader.on_head`), then the body bytes of each read, timestamped once per read
(`on_body`). The one future per request resolves when the reader has enough, when the message is
complete, or with a `WireFault` when the connection or the framing fails. No object is built
per read beyond the body bytes themselves.
"""

from __future__ import annotations

import asyncio
import enum
from collections.abc import Callable
from typing import Protocol, cast

import httptools

# What the connection itself reads of a head, besides the headers its reader asks for.
FRAMING_HEADERS = frozenset((b"transfer-encoding", b"content-length"))
# How many bytes may arrive in a row without a byte of body: a head, a trailer, or chunk framing
# that never ends is unreadable past this, before it piles up in the parser.
BARE_LIMIT = 256 * 1024


class FaultKind(enum.Enum):
    """How a response failed on the wire, before the backend gives it a diagnostic code."""

    closed_before_response = "closed_before_response"
    unreadable_head = "unreadable_head"
    unreadable_body = "unreadable_body"
    cut_body = "cut_body"


class WireFault(Exception):
    """The connection or the response's framing failed; `detail` says how, in words."""

    def __init__(self, kind: FaultKind, detail: str) -> None:
        super().__init__(detail)
        self.kind = kind
        self.detail = detail


class ResponseReader(Protocol):
    """What takes one response's head and body as they arrive (see `AnswerReader`)."""

    def on_head(self, status: int, reason: str, headers: dict[str, str], received_ns: int) -> bool:
        """The head arrived; True when nothing of the body is wanted (the answer is decided)."""
        ...

    def on_body(self, chunk: bytes, received_ns: int) -> bool:
        """The body bytes of one read; True when no more are wanted for the answer."""
        ...


class H1Connection(asyncio.Protocol):
    """One connection; `request` sends prepared bytes and reads the response into a reader.

    Reusable (`reusable`) once a response was read to its end on a connection the server keeps
    alive. Anything else (a cut, a fault, an answer abandoned half-read) closes it.
    """

    __slots__ = (
        "_bare",
        "_body",
        "_chunked",
        "_headers",
        "_length",
        "_now_ns",
        "_parser",
        "_reader",
        "_reason",
        "_waiter",
        "_wanted",
        "closed",
        "complete",
        "extra",
        "head_seen",
        "keep_alive",
        "transport",
    )

    def __init__(self, now_ns: Callable[[], int], wanted: frozenset[bytes]) -> None:
        self._now_ns = now_ns
        # The lower-case names of the headers kept (as `str`) for the reader.
        self._wanted = wanted | FRAMING_HEADERS
        self._parser = httptools.HttpResponseParser(self)
        self._reader: ResponseReader | None = None
        self._waiter: asyncio.Future[None] | None = None
        self._body: list[bytes] = []
        self._headers: dict[str, str] = {}
        self._reason = ""
        self._chunked = False
        self._length: int | None = None
        self.transport: asyncio.Transport | None = None
        self.closed = False
        self.complete = False
        # Bytes of another message came after the answer (never asked for: the connection is
        # spent, and nothing of them reaches the reader).
        self.extra = False
        self.head_seen = False
        self.keep_alive = False
        self._bare = 0

    @property
    def reusable(self) -> bool:
        return self.complete and self.keep_alive and not self.closed and not self.extra

    # asyncio.Protocol

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # A stream connection, TLS or not (uvloop's transports do not subclass asyncio's).
        self.transport = cast(asyncio.Transport, transport)

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        if self._reader is None or self.complete:
            return
        if not self.head_seen:
            detail = "the server closed the connection" if exc is None else _os_words(exc)
            self._fail(FaultKind.closed_before_response, detail)
        elif exc is not None:
            self._fail(FaultKind.cut_body, _os_words(exc))
        elif self._chunked:
            self._fail(
                FaultKind.cut_body,
                "the server closed the connection before the last chunk of the chunked body",
            )
        elif self._length is not None:
            self._fail(
                FaultKind.cut_body,
                "the server closed the connection before the end of the body "
                f"(Content-Length {self._length})",
            )
        else:
            # A body without a length or chunks ends where the connection ends (RFC 9112 6.3).
            self._end()

    def data_received(self, data: bytes) -> None:
        if self._reader is None:
            # Bytes nobody asked for (a second answer, a late error): the connection is spent.
            self.keep_alive = False
            self.close()
            return
        reader = self._reader
        try:
            self._parser.feed_data(data)
        except httptools.HttpParserError as error:
            # What was read before the fault is still the answer's (an error body's excerpt).
            self._deliver(reader)
            kind = FaultKind.unreadable_body if self.head_seen else FaultKind.unreadable_head
            self._fail(kind, _parser_words(error))
            self.close()
            return
        except httptools.HttpParserUpgrade:
            self._fail(FaultKind.unreadable_head, "the server switched protocols")
            self.close()
            return
        if self._deliver(reader):
            self._bare = 0
        elif not self.complete:
            self._bare += len(data)
            if self._bare > BARE_LIMIT:
                self._too_long()
                return
        if self.complete:
            self._end()

    def _deliver(self, reader: ResponseReader) -> bool:
        """The body bytes of this read to `reader`; False when the read held none."""
        body = self._body
        if not body:
            return False
        chunk = body[0] if len(body) == 1 else b"".join(body)
        body.clear()
        if reader.on_body(chunk, self._now_ns()):
            self._wake()
        return True

    def _too_long(self) -> None:
        if self.head_seen:
            self._fail(
                FaultKind.unreadable_body,
                f"more than {BARE_LIMIT // 1024} KiB of trailer or chunk framing without body",
            )
        else:
            self._fail(FaultKind.unreadable_head, f"its head goes on past {BARE_LIMIT // 1024} KiB")
        self.close()

    # llhttp's callbacks

    def on_message_begin(self) -> None:
        if self.complete:
            self.extra = True

    def on_status(self, status: bytes) -> None:
        self._reason = status.decode("latin-1")

    def on_header(self, name: bytes, value: bytes) -> None:
        key = name.lower()
        if key not in self._wanted:
            return  # only the headers someone reads are decoded
        text = value.decode("utf-8", "surrogateescape")
        headers = self._headers
        field = key.decode("latin-1")
        headers[field] = f"{headers[field]}, {text}" if field in headers else text

    def on_headers_complete(self) -> None:
        if self.extra:
            return
        status = self._parser.get_status_code()
        if 100 <= status < 200:
            # An interim answer (100 Continue, 103 Early Hints): the real one follows.
            self._headers = {}
            return
        self.head_seen = True
        headers = self._headers
        self._chunked = "chunked" in headers.get("transfer-encoding", "").lower()
        length = headers.get("content-length")
        self._length = int(length) if length is not None and length.isdigit() else None
        self.keep_alive = self._parser.should_keep_alive()
        reader = self._reader
        if reader is not None and reader.on_head(status, self._reason, headers, self._now_ns()):
            self._wake()

    def on_body(self, body: bytes) -> None:
        if not self.extra:
            self._body.append(body)

    def on_message_complete(self) -> None:
        if self.head_seen:
            self.complete = True

    # Used by the backend

    def request(self, data: bytes, reader: ResponseReader) -> asyncio.Future[None]:
        """Send `data` (a whole prepared request) and read the answer into `reader`."""
        transport = self.transport
        assert transport is not None  # the pool hands out open connections only
        self._reader = reader
        self._headers = {}
        self._reason = ""
        self._bare = 0
        self.complete = self.head_seen = False
        waiter = self._waiter = asyncio.get_running_loop().create_future()
        if self.closed:
            # The server closed it after the pool handed it out, before anything was written.
            self._fail(FaultKind.closed_before_response, "the server closed the connection")
        else:
            transport.write(data)
        return waiter

    def until_complete(self) -> asyncio.Future[None]:
        """A future resolved when the response has been read to its end (or the read failed)."""
        waiter = self._waiter = asyncio.get_running_loop().create_future()
        if self.complete or self.closed:
            waiter.set_result(None)
        return waiter

    def done(self) -> None:
        """The request is over: what is read from now on has no reader."""
        self._reader = None
        self._waiter = None

    def close(self) -> None:
        self.closed = True
        transport = self.transport
        if transport is not None:
            transport.close()

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def _end(self) -> None:
        self.complete = True
        self._wake()

    def _fail(self, kind: FaultKind, detail: str) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_exception(WireFault(kind, detail))


def _os_words(error: BaseException) -> str:
    if isinstance(error, ConnectionResetError):
        return f"the connection was reset ({error.strerror or error})"
    if isinstance(error, OSError) and error.strerror:
        return f"the connection failed ({error.strerror.lower()})"
    return f"{type(error).__name__}: {error}"


def _parser_words(error: BaseException) -> str:
    """llhttp's complaint in words (its messages are already plain: "Invalid character in
    chunk size")."""
    return " ".join(str(error).split()) or type(error).__name__
