"""An incremental server-sent events parser: bytes in any split, frames out, never raises.

It follows the WHATWG event-stream rules (CR, LF and CRLF line ends, `event`/`data`/`id` fields,
comment lines, one optional space after the colon, a leading BOM) and is lenient where real
servers are sloppy: `close` dispatches a last event that had data but no closing blank line.

It works on bytes and never decodes an event's data: every character the rules look at (CR, LF,
the colon, the field names) is ASCII, and no byte of a multi-byte UTF-8 character is ASCII, so
splitting the bytes is splitting the text. The data reaches the handler as the bytes the server
sent, which the JSON decoder reads directly; invalid UTF-8 in them fails JSON decoding
(invalid_json), as the same bytes in a JSON body do.
"""

from __future__ import annotations

from assay.handlers.base import SseEvent, SseFrame

_BOM = b"\xef\xbb\xbf"
_MESSAGE = "message"


class SseParser:
    """Turns a byte stream, fed in chunks of any size, into frames.

    A frame is the event's data as bytes for a plain `message` event (nearly every event of an
    OpenAI-style stream: no object is built per event), or an `SseEvent` for a named one.
    `comments` counts comment lines (`: ping` keep-alives, counted as the rest of their event
    is read), which are not events; `last_id` is the stream's last event id.

    >>> parser = SseParser()
    >>> parser.feed(b": ping\\r\\ndata: {\\"a\\"")
    []
    >>> parser.feed(b": 1}\\r\\n\\r\\nevent: usage\\ndata: [DONE]\\n\\n")
    [b'{"a": 1}', SseEvent(data=b'[DONE]', event='usage')]
    >>> parser.comments
    1
    """

    __slots__ = ("_after_cr", "_head", "_pending", "comments", "last_id")

    def __init__(self) -> None:
        # The bytes after the last blank line: an incomplete event, kept in pieces so a long
        # event arriving in many small chunks is joined once, not once per chunk.
        self._pending: list[bytes] = []
        # The first bytes of the stream while they may still be a split BOM; None once past it.
        self._head: bytes | None = b""
        # The previous chunk ended with CR: an LF at the start of the next ends no line.
        self._after_cr = False
        self.comments = 0
        self.last_id: str | None = None

    def feed(self, chunk: bytes) -> list[SseFrame]:
        """Take the next bytes of the stream; return the frames of the events they complete."""
        if self._head is not None or self._after_cr or b"\r" in chunk:
            chunk = self._normalised(chunk)
        if not chunk:
            return []
        pending = self._pending
        if pending:
            # Only a chunk that completes the pending event is worth joining to it.
            if b"\n\n" not in chunk and not (chunk[0] == 10 and pending[-1][-1] == 10):
                pending.append(chunk)
                return []
            pending.append(chunk)
            chunk = b"".join(pending)
            pending.clear()
        # Nearly every event of an OpenAI-style stream is one `data: {...}` line: split at the
        # starts of such events first, which leaves their data bare with no work per event.
        parts = chunk.split(b"\n\ndata: ")
        last = parts.pop()
        if parts and parts[0][:6] == b"data: ":
            last = b"data: " + last
            # Each split took two line ends; any other line end in the parts belongs to an
            # event with more than one line (the last part is read below). `in` finds one at
            # memchr's speed, where counting them reads the chunk a byte at a time.
            if b"\n" not in b"".join(parts):
                frames: list[SseFrame] = list(parts)
                frames[0] = parts[0][6:]
                return self._take(last, frames)
        return self._take(chunk, [])

    def _take(self, rest: bytes, frames: list[SseFrame]) -> list[SseFrame]:
        """`frames` with those of the events complete in `rest`; its incomplete end kept."""
        blocks = rest.split(b"\n\n")
        tail = blocks.pop()
        if tail:
            self._pending.append(tail)
        for block in blocks:
            # vLLM writes `data: {...}`, TGI `data:{...}`.
            if block[:6] == b"data: " and b"\n" not in block:
                frames.append(block[6:])
            else:
                self._block(block, frames)
        return frames

    def close(self) -> list[SseFrame]:
        """End of stream: dispatch a pending event with data, its blank line or not."""
        if self._head:
            self._pending.append(self._head)
        self._head = None
        frames: list[SseFrame] = []
        if self._pending:
            rest = b"".join(self._pending)
            self._pending.clear()
            for block in rest.split(b"\n\n"):
                self._block(block, frames)
        return frames

    def _normalised(self, chunk: bytes) -> bytes:
        """`chunk` without a leading BOM, with every line end as LF."""
        head = self._head
        if head is not None:
            chunk = head + chunk
            if len(chunk) < len(_BOM) and _BOM.startswith(chunk):
                self._head = chunk  # maybe a BOM split between chunks: wait for more
                return b""
            self._head = None
            if chunk.startswith(_BOM):
                chunk = chunk[len(_BOM) :]
        if self._after_cr and chunk:
            self._after_cr = False
            if chunk[0] == 10:
                chunk = chunk[1:]
        if b"\r" in chunk:
            self._after_cr = chunk[-1] == 13
            chunk = chunk.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        return chunk

    def _block(self, block: bytes, frames: list[SseFrame]) -> None:
        """The lines of one event, ended by a blank line (or the end of the stream)."""
        data: list[bytes] = []
        name = b""
        for line in block.split(b"\n"):
            if not line:
                # A blank line (a block can start with one): dispatch, reset the event name.
                _dispatch(data, name, frames)
                data = []
                name = b""
            elif line[0] == 58:  # ":"
                self.comments += 1
            else:
                field, colon, value = line.partition(b":")
                if colon and value[:1] == b" ":
                    value = value[1:]
                if field == b"data":
                    data.append(value)
                elif field == b"event":
                    name = value
                elif field == b"id" and b"\0" not in value:
                    # The spec ignores an id holding NUL, so a later reconnect cannot be confused.
                    self.last_id = value.decode("utf-8", "replace")
                # `retry` and unknown fields carry nothing assay uses.
        _dispatch(data, name, frames)


def _dispatch(data: list[bytes], name: bytes, frames: list[SseFrame]) -> None:
    """The frame of an event with data; an event without data dispatches nothing."""
    if not data:
        return
    payload = data[0] if len(data) == 1 else b"\n".join(data)
    kind = name.decode("utf-8", "replace") if name else _MESSAGE
    frames.append(payload if kind == _MESSAGE else SseEvent(payload, kind))
