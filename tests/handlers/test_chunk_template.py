"""The learned common chunk (`ChunkTemplate`) gives every stream exactly the answer its parse
chunk by chunk gives: same text, tokens, times, finish reason, faults, whatever the pieces hold
(quotes, escapes, control characters, invalid UTF-8, multi-byte characters) and whatever else
the chunks vary."""

from __future__ import annotations

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from assay.core import Endpoint, GenerationRequest
from assay.core.response import MAX_KEPT_CHUNK_TIMES
from assay.handlers import handler_for
from assay.handlers.base import SseEvent, SseFrame, Transfer
from assay.handlers.choice_stream import ChoiceStream, _delta_piece, _put_delta_piece
from assay.handlers.chunk_template import ChunkTemplate
from assay.handlers.stream import StreamDraft


@pytest.fixture(autouse=True)
def _every_test_starts_with_no_stream_carried() -> None:
    """What an earlier test's streams left (`ChoiceStream._carried`, `_opening`) is dropped."""
    classes = ChoiceStream.__subclasses__()
    while classes:
        kind = classes.pop()
        kind.forget_streams()
        classes.extend(kind.__subclasses__())


def _request(endpoint: Endpoint) -> GenerationRequest:
    return GenerationRequest(
        request_id="r1", endpoint=endpoint, model="m", prompt="hi", max_output_tokens=64
    )


def _chunk(endpoint: Endpoint, piece: bytes, finish: bytes, extra: bytes) -> bytes:
    if endpoint is Endpoint.chat:
        inner = b'{"index":0,"delta":{"content":"' + piece + b'"},"finish_reason":' + finish + b"}"
    else:
        inner = b'{"index":0,"text":"' + piece + b'","finish_reason":' + finish + b"}"
    return b'{"id":"x-1","model":"m"' + extra + b',"choices":[' + inner + b"]}"


# Raw bytes between the quotes: mostly plain text, sometimes what a parse must reject or
# unescape, sometimes a closing quote that changes the chunk's structure.
_PIECES = st.one_of(
    st.text(max_size=6).map(lambda text: orjson.dumps(text)[1:-1]),
    st.binary(max_size=4),
    st.sampled_from([b"", b'\\"', b"\\u00e9", b'a","x":"', b"\xc3", b"\x01", b"\xed\xa0\x80"]),
)
_FINISH = st.sampled_from([b"null", b"null", b"null", b'"stop"', b'""', b"1"])
_EXTRA = st.sampled_from([b"", b"", b"", b',"usage":null', b',"usage":{"completion_tokens":3}'])


def _run(
    endpoint: Endpoint,
    frames: list[bytes],
    learn: bool,
    reads: list[int] | None = None,
    one_at_a_time: bool = False,
) -> object:
    """The result and the partial answer of `frames`, each its own read, or in reads of the
    sizes `reads` (the rest in one) given to `feed_all` (or to `feed` one at a time)."""
    accumulator = handler_for(endpoint).open_accumulator(_request(endpoint), 0)
    assert isinstance(accumulator, StreamDraft)
    if not learn:
        # Never learned, nothing carried from an earlier stream: every chunk parsed.
        if isinstance(accumulator, ChoiceStream):
            type(accumulator).forget_streams()
        accumulator._chunk_template = False
    if reads is None:
        for number, frame in enumerate(frames):
            accumulator.feed(frame, 1000 + number)
    else:
        at = 0
        for number, size in enumerate([*reads, len(frames)]):
            read = list[SseFrame](frames[at : at + size])
            at += size
            if one_at_a_time:
                for each in read:
                    accumulator.feed(each, 1000 + number)
            else:
                accumulator.feed_all(read, 1000 + number)
    transfer = Transfer(send_ns=0, end_ns=10_000)
    result = accumulator.finish(transfer)
    return (repr(result), accumulator.partial(transfer).model_dump())


@settings(max_examples=300, deadline=None)
@given(
    endpoint=st.sampled_from([Endpoint.chat, Endpoint.completions]),
    chunks=st.lists(st.tuples(_PIECES, _FINISH, _EXTRA), min_size=1, max_size=12),
    done=st.booleans(),
)
def test_learned_chunks_count_exactly_as_parsed_ones(
    endpoint: Endpoint, chunks: list[tuple[bytes, bytes, bytes]], done: bool
) -> None:
    frames = [_chunk(endpoint, *chunk) for chunk in chunks]
    if done:
        frames.append(b"[DONE]")
    assert _run(endpoint, frames, learn=True) == _run(endpoint, frames, learn=False)


@settings(max_examples=300, deadline=None)
@given(
    endpoint=st.sampled_from([Endpoint.chat, Endpoint.completions]),
    chunks=st.lists(st.tuples(_PIECES, _FINISH, _EXTRA), min_size=1, max_size=12),
    reads=st.lists(st.integers(min_value=0, max_value=5), max_size=4),
)
def test_chunks_read_many_at_a_time_count_exactly_as_parsed_ones(
    endpoint: Endpoint, chunks: list[tuple[bytes, bytes, bytes]], reads: list[int]
) -> None:
    # Mostly the common chunk, so runs of them come in one read.
    frames = [_chunk(endpoint, b"Rivers", b"null", b"")]
    frames += [_chunk(endpoint, *chunk) for chunk in chunks]
    frames += [_chunk(endpoint, b" run", b"null", b""), b"[DONE]"]
    parsed = _run(endpoint, frames, learn=False, reads=reads, one_at_a_time=True)
    assert _run(endpoint, frames, learn=True, reads=reads) == parsed
    assert _run(endpoint, frames, learn=True, reads=reads, one_at_a_time=True) == parsed


def test_a_run_longer_than_the_kept_chunk_times_folds_as_one_chunk_at_a_time() -> None:
    count = MAX_KEPT_CHUNK_TIMES + 100
    frames = [_chunk(Endpoint.chat, b"w%d" % (number % 7), b"null", b"") for number in range(count)]
    reads = [1, MAX_KEPT_CHUNK_TIMES - 1]
    parsed = _run(Endpoint.chat, frames, learn=False, reads=reads, one_at_a_time=True)
    assert _run(Endpoint.chat, frames, learn=True, reads=reads) == parsed


def test_a_plain_stream_is_read_through_the_template() -> None:
    frames = [_chunk(Endpoint.chat, piece, b"null", b"") for piece in (b"Rivers", b" run", b"!")]
    accumulator = handler_for(Endpoint.chat).open_accumulator(_request(Endpoint.chat), 0)
    assert isinstance(accumulator, StreamDraft)
    for frame in frames:
        accumulator.feed(frame, 5)
    assert accumulator._chunk_template not in (None, False)
    response = accumulator.partial(Transfer(send_ns=0, end_ns=9))
    assert response.text == "Rivers run!"
    assert response.streamed_tokens == 3


def _plain_piece(middle: bytes) -> str | None:
    """What a template reads between its head and tail: the bytes as text when they hold no
    quote, backslash or control character and are valid UTF-8 (the rule, spelled out)."""
    if any(byte < 0x20 or byte in b'"\\' for byte in middle):
        return None
    try:
        return middle.decode()
    except UnicodeDecodeError:
        return None


@settings(max_examples=500, deadline=None)
@given(
    middle=st.one_of(
        st.binary(min_size=1, max_size=8),
        st.text(min_size=1, max_size=8).map(str.encode),
        st.sampled_from([b"\x7f", b"\xc2\xa0", b"a\tb", b"\xe2\x80\xa8", b" caf\xc3\xa9"]),
    )
)
def test_a_template_reads_a_piece_exactly_when_it_is_plain(middle: bytes) -> None:
    head, tail = b'{"choices":[{"text":"', b'"}]}'
    template = ChunkTemplate(head, tail)
    plain = _plain_piece(middle)
    assert template.pieces([head + middle + tail], 0, 1) == ([] if plain is None else [plain])
    # Beside plain pieces in one read: the run ends where this one is not plain.
    frames: list[SseFrame] = [head + b"a" + tail, head + middle + tail, head + b"b" + tail]
    assert template.pieces(frames, 0, 3) == (["a"] if plain is None else ["a", plain, "b"])


def _learned(frame: bytes) -> ChunkTemplate | None:
    obj = orjson.loads(frame)
    piece = obj["choices"][0]["delta"]["content"]
    return ChunkTemplate.learn(frame, obj, piece, _delta_piece, _put_delta_piece)


def test_a_piece_whose_quoted_bytes_occur_twice_is_never_learned() -> None:
    # Unescaped frames, so no probe parse: the piece's bytes as a key, and "," spanning two
    # strings (`"a","b"`), are other occurrences of the quoted piece.
    as_key = b'{"Rivers":1,"choices":[{"delta":{"content":"Rivers"}}]}'
    spanning = b'{"ids":["a","b"],"choices":[{"delta":{"content":","}}]}'
    assert _learned(as_key) is None
    assert _learned(spanning) is None
    alone = _learned(b'{"ids":["a"],"choices":[{"delta":{"content":","}}]}')
    assert alone is not None
    assert alone.pieces([b'{"ids":["a"],"choices":[{"delta":{"content":" b"}}]}'], 0, 1) == [" b"]


@settings(max_examples=300, deadline=None)
@given(
    keys=st.lists(st.text(max_size=4), max_size=3),
    piece=st.text(min_size=1, max_size=4),
    other=st.text(min_size=1, max_size=4),
)
def test_a_template_learned_without_a_probe_reads_what_a_parse_reads(
    keys: list[str], piece: str, other: str
) -> None:
    # Chunks with other strings around the piece, escaped or not: whatever is learned reads a
    # later chunk's piece exactly as its parse does.
    extra = {key: key for key in keys}
    frame = orjson.dumps({**extra, "choices": [{"delta": {"content": piece}}]})
    template = _learned(frame)
    if template is None:
        return
    later = orjson.dumps({**extra, "choices": [{"delta": {"content": other}}]})
    plain = all(char >= " " and char not in '"\\' for char in other)
    assert template.pieces([later], 0, 1) == ([other] if plain else [])


def _stream_chunk(
    answer_id: bytes, piece: bytes, finish: bytes = b"null", extra: bytes = b""
) -> bytes:
    return (
        b'{"id":'
        + answer_id
        + b',"object":"chat.completion.chunk","created":17'
        + extra
        + b',"model":"m","choices":[{"index":0,"delta":{"content":"'
        + piece
        + b'"},"finish_reason":'
        + finish
        + b"}]}"
    )


_ROLE = (
    b'{"id":ID,"object":"chat.completion.chunk","created":17,"model":"m",'
    b'"choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}'
)
# First chunks: the role's, and others that change more than the id, the model and the count.
_FIRSTS = [
    _ROLE,
    _ROLE.replace(b',"model":"m"', b""),
    _ROLE.replace(b"17", b"18"),
    _ROLE.replace(b'"content":""', b'"content":"Hi"'),
    _ROLE.replace(b"null}]}", b'"stop"}]}'),
    _ROLE.replace(b"null}]}", b'null}],"usage":{"completion_tokens":2}}'),
    _ROLE.replace(b'"role":"assistant"', b'"reasoning":"hm"'),
    b'{"id":ID,"error":{"message":"busy"}}',
    b'{"id":ID,"choices":[]}',
]
_CHANGING = ["content", "finish", "usage", "reasoning", "error"]


def _stream(
    answer_id: bytes, pieces: list[bytes], extra: bytes = b"", first: bytes = _ROLE
) -> list[bytes]:
    """A chat stream: the first chunk, a common chunk per piece, the finish and `[DONE]`."""
    role = first.replace(b"ID", answer_id)
    frames = [role] + [_stream_chunk(answer_id, piece, extra=extra) for piece in pieces]
    return [*frames, _stream_chunk(answer_id, b"", b'"stop"', extra), b"[DONE]"]


def _carrying(
    frames: list[bytes],
    carried: ChunkTemplate | None,
    opening: tuple[ChunkTemplate, str | None] | None = None,
) -> tuple[object, ChoiceStream]:
    """`_run` of a chat stream read after a stream whose learned template was `carried` and
    whose first chunk was kept as `opening`."""
    accumulator = handler_for(Endpoint.chat).open_accumulator(_request(Endpoint.chat), 0)
    assert isinstance(accumulator, ChoiceStream)
    type(accumulator)._carried = carried
    type(accumulator)._opening = opening
    for number, frame in enumerate(frames):
        accumulator.feed(frame, 1000 + number)
    transfer = Transfer(send_ns=0, end_ns=10_000)
    result = accumulator.finish(transfer)
    return (repr(result), accumulator.partial(transfer).model_dump()), accumulator


def _learned_from(frames: list[bytes]) -> ChunkTemplate:
    _, accumulator = _carrying(frames, None)
    template = accumulator._chunk_template
    assert isinstance(template, ChunkTemplate)
    assert not template.carried
    return template


def _counted_parses(monkeypatch: pytest.MonkeyPatch) -> list[bytes]:
    """Every chunk orjson parses from now on, in order."""
    parses: list[bytes] = []
    loads = orjson.loads

    def counted(data: bytes) -> object:
        parses.append(data)
        return loads(data)

    monkeypatch.setattr(orjson, "loads", counted)
    return parses


def test_the_next_stream_reads_its_common_chunks_with_the_carried_template(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    carried = _learned_from(_stream(b'"chatcmpl-1"', [b"Rivers", b" run"]))
    later = _stream(b'"chatcmpl-2345"', [b"Deep", b" water", b" runs"])
    parsed = _run(Endpoint.chat, later, learn=False)
    parses = _counted_parses(monkeypatch)
    answer, accumulator = _carrying(later, carried)
    assert answer == parsed
    # The role chunk and the finish are parsed; every common chunk is read by the template.
    assert parses == [later[0], later[-2]]
    template = accumulator._chunk_template
    assert isinstance(template, ChunkTemplate)
    assert template.carried


@pytest.mark.parametrize(
    "extra",
    [b"0", b',"system_fingerprint":"fp"'],
    ids=["another created", "another field"],
)
def test_a_carried_template_falls_back_when_the_next_streams_chunks_differ(extra: bytes) -> None:
    carried = _learned_from(_stream(b'"chatcmpl-1"', [b"Rivers", b" run"]))
    later = _stream(b'"chatcmpl-2"', [b"Deep", b" water"], extra=extra)
    parsed = _run(Endpoint.chat, later, learn=False)
    answer, accumulator = _carrying(later, carried)
    assert answer == parsed
    # The stream learned its own template from its first common chunk, and carries it on.
    template = accumulator._chunk_template
    assert isinstance(template, ChunkTemplate)
    assert not template.carried
    assert type(accumulator)._carried is template
    assert template.pieces([later[2]], 0, 1) == [" water"]


_IDS = st.one_of(
    st.text(max_size=8).map(orjson.dumps),
    st.sampled_from([b'"a\\"b"', b'"\\u00e9"', b"7", b"null", b'"chatcmpl-1"']),
)


@settings(max_examples=300, deadline=None)
@given(
    first=_IDS,
    second=_IDS,
    pieces=st.lists(_PIECES, min_size=1, max_size=6),
    extra=st.sampled_from([b"", b"", b"1", b',"usage":null']),
    openings=st.tuples(st.sampled_from(_FIRSTS), st.sampled_from(_FIRSTS)),
)
def test_a_stream_read_after_another_counts_exactly_as_parsed(
    first: bytes,
    second: bytes,
    pieces: list[bytes],
    extra: bytes,
    openings: tuple[bytes, bytes],
) -> None:
    # Whatever the first stream left (a template, with or without its id's place, or none; its
    # first chunk or none), the next one, of whatever id and shape, is counted as its parse
    # chunk by chunk.
    _, before = _carrying(_stream(first, [b"Rivers", b" run"], first=openings[0]), None)
    template = before._chunk_template
    later = _stream(second, pieces, extra, openings[1])
    answer, _ = _carrying(
        later,
        template if isinstance(template, ChunkTemplate) else None,
        type(before)._opening,
    )
    assert answer == _run(Endpoint.chat, later, learn=False)


def test_the_next_stream_takes_a_first_chunk_like_the_last_streams_unparsed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _, before = _carrying(_stream(b'"chatcmpl-1"', [b"Rivers"]), None)
    opening = type(before)._opening
    assert opening is not None
    assert opening[1] == "m"
    later = _stream(b'"chatcmpl-2345"', [b"Deep", b" water"])
    parsed = _run(Endpoint.chat, later, learn=False)
    parses = _counted_parses(monkeypatch)
    answer, _ = _carrying(later, None, opening)
    assert answer == parsed
    assert later[0] not in parses
    # Another first chunk is parsed (and kept in its place).
    other = _stream(b'"chatcmpl-3"', [b"Deep"], first=_FIRSTS[2])
    parsed = _run(Endpoint.chat, other, learn=False)
    parses.clear()
    answer, accumulator = _carrying(other, None, opening)
    assert answer == parsed
    assert other[0] in parses
    assert type(accumulator)._opening not in (None, opening)


@pytest.mark.parametrize("first", _FIRSTS[3:-1], ids=_CHANGING)
def test_a_first_chunk_that_changes_more_than_the_id_is_never_kept(first: bytes) -> None:
    # Its effect is more than the events, the model and the id: taking it unparsed would lose it.
    _, accumulator = _carrying(_stream(b'"chatcmpl-1"', [b"Rivers"], first=first), None)
    assert type(accumulator)._opening is None


def test_a_stream_whose_first_chunk_names_no_model_learns_its_own_template() -> None:
    # A parsed common chunk would name the model; one read by a carried template would not.
    carried = _learned_from(_stream(b'"chatcmpl-1"', [b"Rivers", b" run"]))
    later = _stream(b'"chatcmpl-2"', [b"Deep", b" water"])
    later[0] = later[0].replace(b',"model":"m"', b"")
    answer, accumulator = _carrying(later, carried)
    assert answer == _run(Endpoint.chat, later, learn=False)
    assert accumulator.partial(Transfer(send_ns=0, end_ns=1)).model == "m"
    template = accumulator._chunk_template
    assert isinstance(template, ChunkTemplate)
    assert not template.carried


def test_an_id_whose_quoted_bytes_occur_twice_is_never_carried() -> None:
    # The first occurrence is another string's: writing the next id there would be wrong.
    frame = b'{"object":"c-1","id":"c-1","choices":[{"delta":{"content":"Rivers"}}]}'
    template = _learned(frame)
    assert template is not None
    assert template.for_id("c-2") is None
    alone = _learned(frame.replace(b'"object":"c-1"', b'"object":"chunk"'))
    assert alone is not None
    assert alone.for_id("c-2") is not None


def test_the_frame_that_ends_a_run_is_parsed_without_trying_the_template_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    frames = _stream(b'"chatcmpl-1"', [b"Rivers", b" run", b" deep"])
    accumulator = handler_for(Endpoint.chat).open_accumulator(_request(Endpoint.chat), 0)
    assert isinstance(accumulator, ChoiceStream)
    accumulator.feed_all(list[SseFrame](frames[:2]), 1000)  # the role chunk, one to learn
    tried: list[int] = []
    pieces = ChunkTemplate.pieces

    def counted(template: ChunkTemplate, read: list[SseFrame], start: int, most: int) -> list[str]:
        tried.append(start)
        return pieces(template, read, start, most)

    monkeypatch.setattr(ChunkTemplate, "pieces", counted)
    rest = list[SseFrame](frames[2:])  # two common chunks, the finish, [DONE]
    accumulator.feed_all(rest, 2000)
    # Tried at the run and at [DONE]; the finish, which ended the run, is parsed untried.
    assert tried == [0, 3]
    assert accumulator.partial(Transfer(send_ns=0, end_ns=1)).text == "Rivers run deep"


def test_an_event_with_a_name_ends_a_run() -> None:
    common = [_stream_chunk(b'"c-1"', piece) for piece in (b"Rivers", b" run", b" deep")]
    template = _learned(common[0])
    assert template is not None
    named = SseEvent(common[1], "delta")
    assert template.pieces([common[0], named, common[2]], 0, 3) == ["Rivers"]
    assert template.pieces([named, common[2]], 0, 2) == []
