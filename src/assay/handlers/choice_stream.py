"""Chat and completions streams: chunks with a `choices` list, nearly all of them one common
chunk that differs from the others only in its text piece (`ChunkTemplate`)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, ClassVar

from assay.core.response import MAX_KEPT_CHUNK_TIMES
from assay.handlers.base import SseFrame
from assay.handlers.chunk_template import ChunkTemplate
from assay.handlers.stream import StreamDraft


class ChoiceStream(StreamDraft, ABC):
    """A chat or completions stream: chunks with a `choices` list, whose common chunk is one
    choice with one text piece (completions' `text`, chat's delta of exactly `{"content": ...}`).
    Subclasses read every other chunk in `_feed_choices`."""

    __slots__ = ()
    # Where the common chunk's piece sits: in the choice's `delta` (chat) or the choice (`text`).
    _IN_DELTA: ClassVar[bool] = False
    # The common chunk the last stream of this class learned: the next stream, once its first
    # chunk gave its id, reads its common chunks with it (`ChunkTemplate.for_id`), and learns
    # its own from the first common chunk that template does not read.
    _carried: ClassVar[ChunkTemplate | None] = None
    # The first chunk of the last stream of this class whose first chunk changed nothing but
    # the count of events, the model (kept here) and the answer's id: the template around that
    # id. The next stream whose first chunk is that chunk with another id takes it unparsed.
    _opening: ClassVar[tuple[ChunkTemplate, str | None] | None] = None
    # Both are a cache of the process, per class (each subclass its own: a transcription
    # stream never starts from a chat stream's): they decide what a chunk costs, never what
    # it counts, since a carried template reads only the bytes it proves (`for_id`, `around`).

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls.forget_streams()

    @classmethod
    def forget_streams(cls) -> None:
        """Drop what the last stream of this class left for the next (its template and its
        opening chunk): the next stream parses as the first one did."""
        cls._carried = None
        cls._opening = None

    def feed(self, frame: SseFrame, received_ns: int) -> None:
        """Take one event: a chunk, `[DONE]`, or an error frame."""
        # This class's own, also for a subclass that reads some events itself and hands the
        # rest here (`TranscriptionsAccumulator`).
        ChoiceStream.feed_all(self, [frame], received_ns)

    def feed_all(self, frames: list[SseFrame], received_ns: int) -> None:
        """Take the events of one read, in order: each run of common chunks in one pass (their
        pieces read by the learned template, `ChunkTemplate.pieces`), every other event parsed.

        A run is counted as its chunks' parses would be, one at a time: each a token of its
        piece, at most up to the chunk times' bound, where one chunk more is taken and folded.
        """
        at, count = 0, len(frames)
        while at < count:
            template = self._chunk_template
            if type(template) is ChunkTemplate and not self._closed:
                times = self._chunk_times
                most = max(MAX_KEPT_CHUNK_TIMES - len(times), 1)
                pieces = template.pieces(frames, at, most)
                if pieces:
                    taken = len(pieces)
                    at += taken
                    self._events += taken
                    self._text.extend(pieces)
                    if self._first_content_ns is None:
                        self._first_content_ns = received_ns
                    if self._first_token_ns is None:
                        self._first_token_ns = received_ns
                    times.extend([received_ns] * taken)
                    self._chunk_tokens.extend([1] * taken)
                    if len(times) > MAX_KEPT_CHUNK_TIMES:
                        self.fold_chunk_times()
                    if taken == most or at == count:
                        continue
                    # The run ended at a frame that is not the common chunk: parsed, not tried.
            if self._events:
                self._feed_parsed(frames[at], received_ns)
            else:
                self._feed_first(frames[at], received_ns)
            at += 1

    def _feed_first(self, frame: SseFrame, received_ns: int) -> None:
        """`feed` of the stream's first event: taken as the last stream's first chunk was when
        it is that chunk with another id (`_opening`), else parsed, and then kept for the next
        stream when it changed nothing but the events, the model and the id."""
        opening = self._opening
        if opening is not None:
            found = opening[0].pieces([frame], 0, 1)
            if found:
                # The state that chunk's parse leaves, with this stream's id.
                self._events = 1
                self._model = opening[1]
                self._answer_id = found[0]
                self._take_carried()
                return
        self._feed_parsed(frame, received_ns)
        if self._chunk_template is None:
            self._take_carried()
        answer_id = self._answer_id
        if type(frame) is not bytes or type(answer_id) is not str or self._events != 1:
            return
        fresh = object.__new__(type(self))
        StreamDraft.__init__(fresh, self._request, self._what)
        for kind in type(self).__mro__:
            for name in getattr(kind, "__slots__", ()):
                # A slot a subclass sets in its own `__init__` is unset on `fresh`: it differs.
                if name not in _OPENED and getattr(self, name, _UNSET) != getattr(
                    fresh, name, _UNSET
                ):
                    return
        template = ChunkTemplate.around(frame, answer_id)
        if template is not None:
            type(self)._opening = (template, self._model)

    def _feed_parsed(self, frame: SseFrame, received_ns: int) -> None:
        """`feed` of a chunk that is parsed."""
        obj = self._open_chunk(frame)
        if obj is None:
            return
        choices = obj["choices"]
        if len(choices) == 1:
            # The common chunk, read here with a fraction of `_feed_choices`' lookups and the
            # same outcome.
            choice = choices[0]
            if type(choice) is dict:
                if self._IN_DELTA:
                    delta = choice.get("delta")
                    piece = (
                        delta.get("content") if type(delta) is dict and len(delta) == 1 else None
                    )
                else:
                    piece = choice.get("text")
                if type(piece) is str:
                    finish = choice.get("finish_reason")
                    if piece:
                        self._text.append(piece)
                        if self._first_content_ns is None:
                            self._first_content_ns = received_ns
                        if finish is not None and type(finish) is str:
                            self._finish_reason = finish
                    elif finish is not None and type(finish) is str:
                        # `""` closing the choice: a finish marker, not a token.
                        self._finish_reason = finish
                        usage = obj.get("usage")
                        if usage is not None:
                            self._count_choices(received_ns, False, usage)
                        return
                    usage = obj.get("usage")
                    if usage is None:
                        # `_token(received_ns, 1)`, inlined.
                        if self._first_token_ns is None:
                            self._first_token_ns = received_ns
                        self._chunk_times.append(received_ns)
                        self._chunk_tokens.append(1)
                        if len(self._chunk_times) > MAX_KEPT_CHUNK_TIMES:
                            self.fold_chunk_times()
                        self._learn_chunk(frame, obj, piece, finish)
                    else:
                        self._count_choices(received_ns, True, usage)
                    return
        self._feed_choices(obj, choices, frame, received_ns)

    def _take_carried(self) -> None:
        """Read this stream's common chunks with the template the last stream learned, once its
        first event gave the stream's id: its chunks are then that chunk with this id
        (`for_id`). Not while the model is unknown: a parsed chunk would then set it, a chunk
        read by a template not.
        """
        carried = self._carried
        answer_id = self._answer_id
        if carried is not None and type(answer_id) is str and self._model is not None:
            self._chunk_template = carried.for_id(answer_id)

    def _learn_chunk(
        self, frame: SseFrame, obj: dict[str, Any], piece: str, finish: object
    ) -> None:
        """Learn the stream's common chunk from `frame`, a parsed chunk with one piece and no
        usage, when it has no finish reason: once, or again in place of a carried template that
        did not read it (see `ChunkTemplate`); kept for the next stream of this class."""
        template = self._chunk_template
        if template is False or (type(template) is ChunkTemplate and not template.carried):
            return  # learned (or not learnable) in this stream already
        if not piece or finish is not None:
            return  # not the common chunk: wait for one
        learned = None
        if type(frame) is bytes:
            read, put = (_delta_piece, _put_delta_piece) if self._IN_DELTA else (_text, _put_text)
            learned = ChunkTemplate.learn(frame, obj, piece, read, put)
        if learned is None:
            self._chunk_template = False
        else:
            self._chunk_template = type(self)._carried = learned

    @abstractmethod
    def _feed_choices(
        self, obj: dict[str, Any], choices: list[Any], frame: SseFrame, received_ns: int
    ) -> None:
        """Any other chunk, read by the endpoint's own loop (each endpoint's accumulator)."""


# What a stream's first chunk may change and still be taken as the next stream's opening.
_OPENED = frozenset({"_answer_id", "_chunk_template", "_events", "_model"})
_UNSET = object()


def _delta_piece(obj: Any) -> object:
    return obj["choices"][0]["delta"]["content"]


def _put_delta_piece(obj: Any, piece: str) -> None:
    obj["choices"][0]["delta"]["content"] = piece


def _text(obj: Any) -> object:
    return obj["choices"][0]["text"]


def _put_text(obj: Any, piece: str) -> None:
    obj["choices"][0]["text"] = piece
