"""What the backend does with each read of an answer, called by the connection as bytes arrive.

An event stream goes straight from the read to the SSE parser and the endpoint's accumulator;
a JSON body and an error body are gathered (the error body capped, the answer's bounded by
`--max-response-bytes`). Every read refreshes the idle deadline; nothing is awaited per read.
"""

from __future__ import annotations

import asyncio
import enum
import zlib
from collections.abc import Callable

from assay.backend.deadlines import DeadlineWatch
from assay.backend.exchange import Exchange
from assay.backend.received import EVENT_STREAM
from assay.core.request import GenerationRequest
from assay.handlers.base import EndpointHandler, SseEvent, SseFrame, StreamAccumulator
from assay.handlers.sse import SseParser

ERROR_BODY_LIMIT = 64 * 1024
# The response headers the reader looks at (besides the request-id echo the backend reads).
READ_HEADERS = ("content-type", "content-encoding")
_EVENT_STREAM_PARAMETERS = EVENT_STREAM + ";"
# The encodings a body may arrive in although assay asked for none: zlib reads these two.
_ZLIB_WBITS = {"gzip": 16 + zlib.MAX_WBITS, "x-gzip": 16 + zlib.MAX_WBITS, "deflate": 0}
_ENCODING_NAMES = {"br": "brotli", "zstd": "zstandard", "compress": "LZW"}


class Mode(enum.Enum):
    """How the body is read, decided by the head."""

    waiting = "waiting"
    stream = "stream"
    whole = "whole"
    error = "error"


class Stop(enum.Enum):
    """Why reading stopped before the end of the body."""

    too_large = "too_large"
    undecodable = "undecodable"


class AnswerReader:
    """Takes one answer's head and reads (a `ResponseReader` for `H1Connection`)."""

    __slots__ = (
        "_clean",
        "_decoder",
        "_echo",
        "_feed",
        "_handler",
        "_limit",
        "_loop",
        "_request",
        "_size",
        "_watch",
        "accumulator",
        "content_type",
        "exchange",
        "mode",
        "parser",
        "problem",
        "stop",
    )

    def __init__(
        self,
        request: GenerationRequest,
        handler: EndpointHandler,
        exchange: Exchange,
        watch: DeadlineWatch,
        *,
        limit: int,
        clean: Callable[[bytes], bytes] | None,
        echo: Callable[[dict[str, str], Exchange], None],
        loop: asyncio.AbstractEventLoop,
    ) -> None:
        self._request = request
        self._handler = handler
        self.exchange = exchange
        self._watch = watch
        self._limit = limit
        # Secrets leave each event's data before the handler sees it (None: nothing to hide).
        self._clean = clean
        self._echo = echo
        self._loop = loop
        self._size = 0
        self._decoder: zlib._Decompress | _DeflateAnyHeader | None = None
        self._feed: Callable[[list[SseFrame], int], None] | None = None
        self.mode = Mode.waiting
        self.content_type: str | None = None
        self.accumulator: StreamAccumulator | None = None
        self.parser: SseParser | None = None
        self.stop: Stop | None = None
        self.problem = ""

    def on_head(self, status: int, reason: str, headers: dict[str, str], received_ns: int) -> bool:
        exchange = self.exchange
        exchange.first_byte_ns = received_ns
        exchange.http_status = status
        self._echo(headers, exchange)
        if not 200 <= status < 300:
            exchange.reason = reason
            # No token will come; only the idle and total deadlines bound the error body.
            self._watch.token_seen = True
            self.mode = Mode.error
            return False
        encoding = headers.get("content-encoding")
        if encoding is not None and not self._decodes(encoding):
            return True
        content_type = self.content_type = headers.get("content-type")
        if _is_event_stream(content_type):
            accumulator = self._handler.open_accumulator(self._request, exchange.send_ns)
            exchange.accumulator = self._watch.accumulator = self.accumulator = accumulator
            self._feed = accumulator.feed_all
            self.parser = SseParser()
            self.mode = Mode.stream
        else:
            self.mode = Mode.whole
        return False

    def on_body(self, chunk: bytes, received_ns: int) -> bool:
        self._watch.last_byte_at = self._loop.time()
        if self.stop is not None:
            return True
        if self._decoder is not None:
            # Inflated at most one byte past what may be kept: a bomb stops at the size check.
            room = (ERROR_BODY_LIMIT if self.mode is Mode.error else self._limit) - self._size
            try:
                chunk = self._decoder.decompress(chunk, max(room, 0) + 1)
            except zlib.error as error:
                self.stop = Stop.undecodable
                self.problem = f"the body cannot be decoded: {error}"
                return True
        mode = self.mode
        if mode is Mode.stream:
            return self._stream(chunk, received_ns)
        received = self.exchange.received
        size = self._size = self._size + len(chunk)
        if mode is Mode.whole:
            if size > self._limit:
                # Keep only the head for the excerpt: the rest is what must not pile up.
                head = received[0] if received else chunk
                received[:] = [head[:ERROR_BODY_LIMIT]]
                self.stop = Stop.too_large
                return True
            received.append(chunk)
            return False
        received.append(chunk)
        return size >= ERROR_BODY_LIMIT

    def _stream(self, chunk: bytes, received_ns: int) -> bool:
        """The hot path: the read's events straight into the accumulator."""
        accumulator = self.accumulator
        parser = self.parser
        feed = self._feed
        assert accumulator is not None  # set with Mode.stream, as are the parser and feed
        assert parser is not None
        assert feed is not None
        terminal_ns = self.exchange.terminal_ns
        if terminal_ns is not None:
            # After the terminal marker: what follows is counted, never part of the answer, and
            # no more of it is read past the limit (the answer ended; the connection is cut).
            feed(self._frames(parser.feed(chunk)), terminal_ns)
            size = self._size = self._size + len(chunk)
            return size > self._limit
        feed(self._frames(parser.feed(chunk)), received_ns)
        size = self._size = self._size + len(chunk)
        if size > self._limit:
            # An endless stream, or one line that never ends (the parser holds it): memory
            # stays within the limit plus one read.
            self.stop = Stop.too_large
            return True
        if accumulator.failed:
            return True
        if accumulator.ended:
            self.exchange.terminal_ns = received_ns
            return True
        return False

    def close_stream(self, end_ns: int) -> None:
        """The body ended: the parser's last event, if any, goes to the accumulator."""
        parser = self.parser
        feed = self._feed
        if parser is not None and feed is not None:
            feed(self._frames(parser.close()), end_ns)

    def _frames(self, frames: list[SseFrame]) -> list[SseFrame]:
        clean = self._clean
        if clean is None or not frames:
            return frames
        return [
            clean(frame) if isinstance(frame, bytes) else SseEvent(clean(frame.data), frame.event)
            for frame in frames
        ]

    def _decodes(self, encoding: str) -> bool:
        """Set up decoding of `encoding`; False (and `problem` set) when assay cannot."""
        name = encoding.strip().lower()
        if name in ("", "identity"):
            return True
        wbits = _ZLIB_WBITS.get(name)
        if wbits is not None:
            self._decoder = zlib.decompressobj(wbits) if wbits else _DeflateAnyHeader()
            return True
        self.stop = Stop.undecodable
        shown = _ENCODING_NAMES.get(name, name)
        self.problem = (
            f"the body cannot be read: Content-Encoding {encoding} ({shown}) "
            "(assay asks for an uncompressed body and does not decode this encoding)"
        )
        return False


class _DeflateAnyHeader:
    """`deflate` as servers send it: zlib-wrapped, or raw as some do (read like browsers do)."""

    __slots__ = ("_inner",)

    def __init__(self) -> None:
        self._inner: zlib._Decompress | None = None

    def decompress(self, data: bytes, max_length: int = 0) -> bytes:
        if self._inner is None:
            raw = bool(data) and (data[0] & 0x0F) != 8
            self._inner = zlib.decompressobj(-zlib.MAX_WBITS if raw else zlib.MAX_WBITS)
        return self._inner.decompress(data, max_length)


def _is_event_stream(content_type: str | None) -> bool:
    """An event stream by its Content-Type, whatever the case and spacing.

    >>> _is_event_stream("text/event-stream; charset=utf-8"), _is_event_stream("Text/Event-Stream")
    (True, True)
    >>> _is_event_stream("text/plain"), _is_event_stream(None)
    (False, False)
    """
    if content_type is None:
        return False
    if content_type == EVENT_STREAM or content_type.startswith(_EVENT_STREAM_PARAMETERS):
        return True
    return content_type.partition(";")[0].strip().lower() == EVENT_STREAM
