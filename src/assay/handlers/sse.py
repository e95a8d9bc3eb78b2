"""An incremental server-sent events parser: bytes in any split, events out, never raises.

It follows the WHATWG event-stream rules (CR, LF and CRLF line ends, `event`/`data`/`id` fields,
comment lines, one optional space after the colon, a leading BOM) and is lenient where real
servers are sloppy: `close` dispatches a last event that had data but no closing blank line.
Bytes are decoded incrementally, so a multi-byte character split between two chunks is
reassembled. Invalid bytes are kept as surrogate escapes instead of raising, so the data of an
event with invalid UTF-8 fails JSON decoding (invalid_json), as the same bytes in a JSON body
do.
"""

from __future__ import annotations

import codecs

from assay.handlers.base import SseEvent

_BOM = "\ufeff"


class SseParser:
    """Turns a byte stream, fed in chunks of any size, into `SseEvent`s.

    `comments` counts comment lines (`: ping` keep-alives), which are not events.

    >>> parser = SseParser()
    >>> parser.feed(b": ping\\r\\ndata: {\\"a\\"")
    []
    >>> [event.data for event in parser.feed(b": 1}\\r\\n\\r\\ndata: [DONE]\\n\\n")]
    ['{"a": 1}', '[DONE]']
    >>> parser.comments
    1
    """

    __slots__ = (
        "_after_cr",
        "_at_start",
        "_data",
        "_decoder",
        "_event",
        "_last_id",
        "_pending",
        "comments",
    )

    def __init__(self) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="surrogateescape")
        # The tail of the stream after the last line end: an incomplete line, kept in pieces so
        # a long line arriving in many small chunks is joined once, not once per chunk.
        self._pending: list[str] = []
        # The previous text ended with CR: an LF at the start of the next text ends no line.
        self._after_cr = False
        self._at_start = True
        self._data: list[str] = []
        self._event = ""
        self._last_id: str | None = None
        self.comments = 0

    def feed(self, chunk: bytes) -> list[SseEvent]:
        """Take the next bytes of the stream; return the events they complete."""
        return self._take(self._decoder.decode(chunk))

    def close(self) -> list[SseEvent]:
        """End of stream: flush the decoder, the last line and a pending event with data."""
        events = self._take(self._decoder.decode(b"", final=True))
        if self._pending or self._data:
            # A blank line ends the last line and dispatches the event it completes; a CR that
            # ended the stream must not swallow it as the first half of a CRLF.
            self._after_cr = False
            events += self._take("\n\n" if self._pending else "\n")
        return events

    def _take(self, text: str) -> list[SseEvent]:
        if not text:
            return []
        if self._at_start:
            self._at_start = False
            if text[0] == _BOM:
                text = text[1:]
        if self._after_cr:
            self._after_cr = False
            if text[:1] == "\n":
                text = text[1:]
        events: list[SseEvent] = []
        if "\r" in text:
            self._after_cr = text[-1] == "\r"
            text = text.replace("\r\n", "\n").replace("\r", "\n")
        elif "\n" not in text:
            if text:
                self._pending.append(text)
            return events
        lines = text.split("\n")
        if self._pending:
            self._pending.append(lines[0])
            lines[0] = "".join(self._pending)
            self._pending.clear()
        tail = lines.pop()
        if tail:
            self._pending.append(tail)
        # The two lines of nearly every chunk (`data: ...` and the blank line) are handled
        # inline, with the common spelling tested first: this loop runs once per line of every
        # stream.
        data = self._data
        keep = data.append
        emit = events.append
        for line in lines:
            if line:
                # vLLM writes `data: {...}`, TGI `data:{...}`.
                if line[:6] == "data: ":
                    keep(line[6:])
                elif line[:5] == "data:":
                    keep(line[5:])
                else:
                    self._line(line)
            else:
                if data:
                    emit(
                        SseEvent(
                            data[0] if len(data) == 1 else "\n".join(data),
                            self._event or "message",
                            self._last_id,
                        )
                    )
                    data.clear()
                self._event = ""
        return events

    def _line(self, line: str) -> None:
        if line[0] == ":":
            self.comments += 1
            return
        field, colon, value = line.partition(":")
        if colon and value[:1] == " ":
            value = value[1:]
        if field == "event":
            self._event = value
        elif field == "data":
            self._data.append(value)
        elif field == "id" and "\0" not in value:
            # The spec ignores an id holding NUL, so a later reconnect cannot be confused.
            self._last_id = value
        # `retry` and unknown fields carry nothing assay uses.
