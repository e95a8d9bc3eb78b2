"""The common chunk of a stream, learned once, so later chunks that differ from it only in their
text piece are read without a JSON parse.

A streaming server writes nearly every chunk of an answer as the same bytes around a different
piece of text: `{"id":"chatcmpl-1",...,"delta":{"content":"` + piece + `"},...}`. Once a
chunk has been parsed, its bytes are split at its piece into a head and a tail, and the split is
proven: the head and tail around another plain string must parse to the same JSON value with
only that piece replaced (a chunk with no backslash proves it by its bytes alone, see `learn`).
A later chunk that is that head, a plain string (no quote, backslash or control character,
valid UTF-8) and that tail is then the same sequence of JSON tokens with one string value
changed, so parsing it would give the learned chunk with that piece: the accumulator counts it
exactly as it counts the parsed one. Anything else is parsed as usual.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import orjson

from assay.handlers.base import SseFrame

# What a JSON string's bytes must not hold to be read as they are: a quote, a backslash (an
# escape), or a control character (invalid JSON, which the parse must report).
_NOT_PLAIN = re.compile(rb'[\x00-\x1f"\\]')


class ChunkTemplate:
    """The bytes around the piece of a stream's common chunk.

    >>> frame = b'{"choices":[{"delta":{"content":"Rivers"},"finish_reason":null}]}'
    >>> def piece(obj: Any) -> object:
    ...     return obj["choices"][0]["delta"]["content"]
    >>> def put(obj: Any, text: str) -> None:
    ...     obj["choices"][0]["delta"]["content"] = text
    >>> template = ChunkTemplate.learn(frame, orjson.loads(frame), "Rivers", piece, put)
    >>> template.pieces([b'{"choices":[{"delta":{"content":" run"},"finish_reason":null}]}'], 0, 1)
    [' run']
    >>> template.pieces([b'{"choices":[{"delta":{"content":"a\\\\"b"},"finish_reason":1}]}'], 0, 1)
    []
    """

    __slots__ = (
        "_head",
        "_id_end",
        "_id_start",
        "_size",
        "_tail",
        "_tail_size",
        "carried",
    )

    def __init__(
        self, head: bytes, tail: bytes, id_start: int = -1, id_end: int = -1, carried: bool = False
    ) -> None:
        self._head = head
        self._tail = tail
        self._tail_size = len(tail)
        self._size = len(head) + len(tail)
        # Where the answer's id sits in `head`, between its quotes (`for_id`); -1 when unknown.
        self._id_start = id_start
        self._id_end = id_end
        # Made by `for_id` from another stream's template, not learned from this stream's chunk.
        self.carried = carried

    def pieces(self, frames: list[SseFrame], start: int, most: int) -> list[str]:
        """The pieces of the run of common chunks in `frames` from `start`, at most `most`.

        A frame is the common chunk when it is the head, a plain non-empty piece (valid UTF-8
        with no quote, backslash or control character: `_plain`) and the tail; the run ends at
        the first frame that is not. A read brings many events at once: their pieces are read in
        one loop and told plain in one test of their joined text (printable, with no quote or
        backslash, holds for the whole exactly when it holds for each).

        >>> frame = b'{"choices":[{"delta":{"content":"Rivers"},"finish_reason":null}]}'
        >>> def piece(obj: Any) -> object:
        ...     return obj["choices"][0]["delta"]["content"]
        >>> def put(obj: Any, text: str) -> None:
        ...     obj["choices"][0]["delta"]["content"] = text
        >>> template = ChunkTemplate.learn(frame, orjson.loads(frame), "Rivers", piece, put)
        >>> chunk = frame.replace(b"Rivers", b" run")
        >>> template.pieces([frame, chunk, frame.replace(b"Rivers", b'a\\"'), chunk], 0, 9)
        ['Rivers', ' run']
        >>> template.pieces([frame, chunk], 1, 9), template.pieces([frame, chunk], 0, 1)
        ([' run'], ['Rivers'])
        """
        head, size, tail = self._head, self._size, self._tail
        at, cut = len(head), -self._tail_size  # the tail opens with a quote: never empty
        pieces: list[str] = []
        # Read as bytes: an `SseEvent` among them ends the run by the TypeError its `len` raises
        # (a type test per chunk cost about a tenth of the loop). Slices are compared, not
        # `startswith`/`endswith`, which parse their arguments through a format string: a
        # tenth of the loop too.
        run: list[Any] = frames[start : start + most] if start or len(frames) > most else frames
        try:
            for frame in run:
                if len(frame) <= size or frame[:at] != head or frame[cut:] != tail:
                    break
                pieces.append(frame[at:cut].decode())
        except (TypeError, UnicodeDecodeError):
            pass  # an event with a name (an `SseEvent` has no length), or invalid UTF-8: run over
        if not pieces:
            return pieces
        joined = "".join(pieces)
        if joined.isprintable() and '"' not in joined and "\\" not in joined:
            return pieces
        # Some piece is not plain at first sight: each decided alone.
        for taken, text in enumerate(pieces):
            if not _plain(text):
                return pieces[:taken]
        return pieces

    def for_id(self, answer_id: str) -> ChunkTemplate | None:
        """This template for a stream whose answer id is `answer_id`: the same chunk with that
        id, or None when the id's place is unknown or `answer_id` is not plain.

        Sound as `learn`'s proof without a probe is: the learned chunk held no backslash, so
        its id was the raw bytes between two quotes, and a plain id written there changes that
        one string's value and nothing else.

        >>> frame = b'{"id":"c-1","choices":[{"text":"Rivers"}]}'
        >>> def piece(obj: Any) -> object:
        ...     return obj["choices"][0]["text"]
        >>> def put(obj: Any, text: str) -> None:
        ...     obj["choices"][0]["text"] = text
        >>> template = ChunkTemplate.learn(frame, orjson.loads(frame), "Rivers", piece, put)
        >>> template.for_id("c-22").pieces([frame.replace(b"c-1", b"c-22")], 0, 1)
        ['Rivers']
        >>> template.for_id('c"2') is None, template.for_id("c-22").pieces([frame], 0, 1)
        (True, [])
        """
        start, end = self._id_start, self._id_end
        if start < 0 or not _plain(answer_id):
            return None
        encoded = answer_id.encode()
        head = self._head
        return ChunkTemplate(
            head[:start] + encoded + head[end:], self._tail, start, start + len(encoded), True
        )

    @classmethod
    def around(cls, frame: bytes, text: str) -> ChunkTemplate | None:
        """The template of `frame` around `text`, one of its string values, when its bytes
        alone prove it (no backslash in the frame, one occurrence of `text` quoted: see
        `learn`), else None.

        >>> frame = b'{"id":"c-1","choices":[{"delta":{"role":"assistant"}}]}'
        >>> ChunkTemplate.around(frame, "c-1").pieces([frame.replace(b"c-1", b"c-2")], 0, 1)
        ['c-2']
        >>> ChunkTemplate.around(frame.replace(b"c-1", b"c-\\\\1"), "c-\\1") is None
        True
        """
        place = None if b"\\" in frame else _quoted_once(frame, text)
        return None if place is None else cls(frame[: place[0]], frame[place[1] :])

    @classmethod
    def learn(
        cls,
        frame: bytes,
        obj: Any,
        piece: str,
        read: Callable[[Any], object],
        put: Callable[[Any, str], None],
    ) -> ChunkTemplate | None:
        """The template of `frame` (parsed as `obj`, whose piece `read` finds and `put`
        replaces), or None when its piece cannot be told apart or the split does not prove out.
        """
        place = _quoted_once(frame, piece)
        if place is None:
            return None
        head, tail = frame[: place[0]], frame[place[1] :]
        if b"\\" not in frame:
            # Proven without a probe: with no backslash in the frame every string is written
            # as its raw bytes between two quotes, and a quote only opens or closes one. The
            # piece's own string is then an occurrence of `encoded`, and the only one: the
            # bytes between head and tail are that value, and another plain piece there
            # changes that value alone. (The commonest chunk; the probe below costs a parse.)
            # The answer's id is found the same way, for the next stream (`for_id`).
            answer_id = obj.get("id") if type(obj) is dict else None
            found = _quoted_once(frame, answer_id) if type(answer_id) is str else None
            if found is not None and found[1] < len(head):
                return cls(head, tail, *found)
            return cls(head, tail)
        probe = "q" if piece == "p" else "p"
        try:
            probed = orjson.loads(head + probe.encode() + tail)
            if read(probed) != probe:
                return None
            put(probed, piece)
        except (orjson.JSONDecodeError, LookupError, TypeError, AttributeError):
            return None
        # Equal apart from the piece: the bytes between head and tail are that value and
        # nothing else.
        return cls(head, tail) if probed == obj else None


def _quoted_once(frame: bytes, text: str) -> tuple[int, int] | None:
    """Where the value of `text`'s JSON string sits in `frame` (after its opening quote, at its
    closing one) when `frame` holds that string exactly once, else None."""
    encoded = orjson.dumps(text)
    at = frame.find(encoded)
    if at < 0 or frame.find(encoded, at + 1) >= 0:
        return None
    return at + 1, at + len(encoded) - 1


def _plain(piece: str) -> bool:
    """Whether `piece` (decoded from valid UTF-8) holds no quote, backslash or control
    character: read as it is, it is the JSON string's value.

    Printable text holds no control character: with no quote or backslash it is plain, told
    cheaper than by `_NOT_PLAIN`'s search, which decides the rest (a tab, a no-break space) on
    the same bytes (valid UTF-8 encodes back to itself).
    """
    if piece.isprintable() and '"' not in piece and "\\" not in piece:
        return True
    return _NOT_PLAIN.search(piece.encode()) is None
