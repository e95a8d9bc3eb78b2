"""The SSE parser: WHATWG field rules, every line end, any split of the byte stream.

A `message` event comes out as its data bytes, a named one as an `SseEvent`.
"""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from assay.handlers import SseEvent, SseFrame, SseParser

VLLM_STREAM = (
    b'data: {"id":"chatcmpl-a8e0","object":"chat.completion.chunk","choices":[{"index":0,'
    b'"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}\n\n'
    b": ping\n\n"
    b'data: {"id":"chatcmpl-a8e0","choices":[{"index":0,'
    b'"delta":{"content":"caf\xc3\xa9 \xe2\x82\xac"}}]}'
    b"\r\n\r\n"
    b"event: error\r"
    b'data: {"error": {"message": "engine died"}}\r\r'
    b"id: 7\n"
    b"data: line one\n"
    b"data: line two\n\n"
    b"data: [DONE]\n\n"
)


def _parse_in_pieces(raw: bytes, cuts: list[int]) -> tuple[list[SseFrame], int]:
    parser = SseParser()
    events: list[SseFrame] = []
    start = 0
    for cut in [*sorted(cuts), len(raw)]:
        events += parser.feed(raw[start:cut])
        start = cut
    events += parser.close()
    return events, parser.comments


def test_parses_a_realistic_stream_with_every_line_end() -> None:
    parser = SseParser()
    events = parser.feed(VLLM_STREAM) + parser.close()

    assert len(events) == 5
    assert isinstance(events[1], bytes)
    assert events[1].endswith('"content":"café €"}}]}'.encode())
    assert events[2] == SseEvent(b'{"error": {"message": "engine died"}}', event="error")
    assert events[3] == b"line one\nline two"
    assert events[4] == b"[DONE]"
    assert parser.comments == 1
    assert parser.last_id == "7"  # the last event id persists, as the spec says


def test_every_single_split_of_a_stream_gives_the_same_events() -> None:
    expected = _parse_in_pieces(VLLM_STREAM, [])
    for cut in range(len(VLLM_STREAM) + 1):
        assert _parse_in_pieces(VLLM_STREAM, [cut]) == expected, cut


def test_byte_by_byte_feeding_gives_the_same_events() -> None:
    expected = _parse_in_pieces(VLLM_STREAM, [])
    assert _parse_in_pieces(VLLM_STREAM, list(range(len(VLLM_STREAM)))) == expected


def test_cr_at_the_end_of_a_chunk_and_lf_at_the_start_of_the_next_is_one_line_end() -> None:
    parser = SseParser()
    assert parser.feed(b"data: a\r") == []
    # A second line end would dispatch here if the LF were counted on its own.
    assert parser.feed(b"\n") == []
    assert parser.feed(b"\r\n") == [b"a"]


def test_lone_cr_line_ends_dispatch() -> None:
    assert SseParser().feed(b"data: a\r\rdata: b\r\r") == [b"a", b"b"]


def test_multi_byte_character_split_between_chunks_is_reassembled() -> None:
    parser = SseParser()
    euro = "€".encode()
    assert parser.feed(b"data: " + euro[:1]) == []
    assert parser.feed(euro[1:2]) == []
    assert parser.feed(euro[2:] + b"\n\n") == ["€".encode()]


def test_invalid_utf8_is_kept_as_sent_not_replaced() -> None:
    # Issue 9: a U+FFFD here made the same bytes valid JSON in a stream and invalid in a body.
    # Kept as sent, the data fails JSON decoding downstream, as a body does.
    assert SseParser().feed(b"data: a\xffb\n\n") == [b"a\xffb"]


def test_truncated_character_at_close_is_kept_as_sent() -> None:
    parser = SseParser()
    assert parser.feed(b"data: x\xe2\x82") == []
    assert parser.close() == [b"x\xe2\x82"]


def test_leading_bom_is_stripped_even_when_split() -> None:
    parser = SseParser()
    assert parser.feed(b"\xef\xbb") == []
    assert parser.feed(b"\xbfdata: a\n\n") == [b"a"]


def test_bom_after_the_start_is_kept() -> None:
    assert SseParser().feed(b"data: \xef\xbb\xbfa\n\n") == [b"\xef\xbb\xbfa"]


def test_field_without_colon_has_an_empty_value() -> None:
    assert SseParser().feed(b"data\ndata\n\n") == [b"\n"]


def test_only_one_space_after_the_colon_is_stripped() -> None:
    assert SseParser().feed(b"data:  two\ndata:none\n\n") == [b" two\nnone"]


def test_comment_lines_are_counted_not_dispatched() -> None:
    parser = SseParser()
    assert parser.feed(b": ping\n\n:\n\n: keep-alive\n") == []
    assert parser.comments == 2  # the third is read with the rest of its event
    assert parser.close() == []
    assert parser.comments == 3


def test_blank_line_without_data_dispatches_nothing_and_resets_the_event_name() -> None:
    assert SseParser().feed(b"event: error\n\ndata: x\n\n") == [b"x"]


def test_unknown_fields_and_retry_are_ignored() -> None:
    assert SseParser().feed(b"retry: 10\nfoo: bar\ndata: x\n\n") == [b"x"]


def test_id_with_nul_is_ignored() -> None:
    parser = SseParser()
    assert parser.feed(b"id: 1\n\nid: a\x00b\ndata: x\n\n") == [b"x"]
    assert parser.last_id == "1"


def test_close_dispatches_an_event_without_its_blank_line() -> None:
    parser = SseParser()
    assert parser.feed(b'data: {"a":1}\ndata: [DONE]') == []
    assert parser.close() == [b'{"a":1}\n[DONE]']


def test_close_without_pending_data_dispatches_nothing() -> None:
    parser = SseParser()
    assert parser.feed(b"data: a\n\nevent: error\n") == [b"a"]
    assert parser.close() == []


def test_a_long_line_in_many_small_chunks_is_joined() -> None:
    parser = SseParser()
    payload = b'data: {"text": "' + b"x" * 5000 + b'"}'
    for start in range(0, len(payload), 7):
        assert parser.feed(payload[start : start + 7]) == []
    assert parser.feed(b"\n\n") == [payload[6:]]


_FIELD_VALUE = st.text(
    alphabet=st.characters(exclude_characters="\r\n", exclude_categories=["Cs"]), max_size=12
)
_LINE_END = st.sampled_from(["\n", "\r", "\r\n"])


@st.composite
def _event_streams(draw: st.DrawFn) -> tuple[bytes, list[SseFrame]]:
    """A stream of events written with random line ends, and the events it must give."""
    text: list[str] = []
    events: list[SseFrame] = []
    # One line-end style per stream: a CR line end followed by an LF one would read as CRLF.
    end = draw(_LINE_END)
    for _ in range(draw(st.integers(0, 5))):
        name = draw(st.one_of(st.none(), st.sampled_from(["error", "response.completed"])))
        lines = draw(st.lists(_FIELD_VALUE, min_size=1, max_size=3))
        if name is not None:
            text += ["event: ", name, end]
        if draw(st.booleans()):
            text += [": ping", end]
        for line in lines:
            text += ["data: ", line, end]
        text.append(end)
        data = "\n".join(lines).encode()
        events.append(data if name is None else SseEvent(data, event=name))
    return "".join(text).encode(), events


@settings(max_examples=200, deadline=None)
@given(_event_streams(), st.lists(st.integers(0, 400), max_size=8))
def test_random_splits_of_random_streams_give_the_written_events(
    stream: tuple[bytes, list[SseFrame]], cuts: list[int]
) -> None:
    raw, expected = stream
    events, _ = _parse_in_pieces(raw, [min(cut, len(raw)) for cut in cuts])
    assert events == expected


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=300), st.lists(st.integers(0, 300), max_size=6))
def test_arbitrary_bytes_in_any_split_give_the_same_events(raw: bytes, cuts: list[int]) -> None:
    assert _parse_in_pieces(raw, [min(cut, len(raw)) for cut in cuts]) == _parse_in_pieces(raw, [])


def test_close_after_a_trailing_cr_dispatches_the_event() -> None:
    parser = SseParser()
    assert parser.feed(b"data: a\r") == []
    assert parser.close() == [b"a"]


def _reference_frames(raw: bytes) -> list[SseFrame]:
    """The WHATWG rules read straight from the whole stream, line by line: what any split of
    it must give (lenient at the end, as the parser is: a last event with data dispatches)."""
    raw = raw.removeprefix(b"\xef\xbb\xbf")
    frames: list[SseFrame] = []
    data: list[bytes] = []
    name = b""
    for line in [*re.split(b"\r\n|\r|\n", raw), b""]:
        if not line:
            if data:
                kind = name.decode("utf-8", "replace") or "message"
                payload = b"\n".join(data)
                frames.append(payload if kind == "message" else SseEvent(payload, kind))
            data, name = [], b""
        elif not line.startswith(b":"):
            field, colon, value = line.partition(b":")
            value = value[1:] if colon and value.startswith(b" ") else value
            if field == b"data":
                data.append(value)
            elif field == b"event":
                name = value
    return frames


_STREAM_BYTES = st.lists(
    st.sampled_from(
        [
            b"data",
            b"data:",
            b"data: ",
            b"event: ",
            b"error",
            b"message",
            b"x",
            b":",
            b" ",
            b"\r",
            b"\n",
            b"\r\n",
            b"\xef\xbb\xbf",
            b"\xe2\x82\xac",
            b"\xff",
            b"id: 3",
        ]
    ),
    max_size=40,
).map(b"".join)


@settings(max_examples=400, deadline=None)
@given(_STREAM_BYTES, st.lists(st.integers(0, 200), max_size=8))
def test_any_split_gives_what_the_rules_read_from_the_whole_stream(
    raw: bytes, cuts: list[int]
) -> None:
    frames, _ = _parse_in_pieces(raw, [min(cut, len(raw)) for cut in cuts])
    assert frames == _reference_frames(raw)
