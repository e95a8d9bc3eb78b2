"""The per-request bookkeeping's short paths (an answer inside one second, a request inside one
timeline bucket) give the figures of a plain count written out here."""

from __future__ import annotations

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from assay.core import Endpoint, GenerationResponse, ResponseTiming, TokenSource, Usage
from assay.metrics import Timeline
from assay.metrics.arrivals import add_arrivals
from assay.records import Cancelled, Completed, RequestRecord
from assay.spec.constraints import NS_PER_S

Record = RequestRecord[GenerationResponse]


@st.composite
def timings(draw: st.DrawFn) -> ResponseTiming:
    """Chunks of any token count (none, negative, missing) over one or several seconds."""
    send = draw(st.integers(0, 3 * NS_PER_S))
    spread = draw(st.sampled_from([1_000, NS_PER_S // 50, NS_PER_S // 2]))
    gaps = draw(st.lists(st.integers(0, spread), max_size=30))
    times = tuple(itertools.accumulate(gaps, initial=send + draw(st.integers(0, NS_PER_S))))
    counts = tuple(draw(st.lists(st.integers(-1, 3), max_size=len(times))))
    return ResponseTiming(
        send_ns=send,
        first_token_ns=times[0],
        last_token_ns=times[-1],
        end_ns=times[-1] + draw(st.integers(0, 2 * NS_PER_S)),
        chunk_times_ns=times,
        chunk_tokens=counts,
    )


def arrivals_counted_plainly(origin: int, timing: ResponseTiming, output: int) -> dict[int, int]:
    """Per second after `origin`: the answer's `output` tokens in proportion to what the chunks
    up to that second's end carried (rounded half up), the rest with the end when none did."""
    times = timing.chunk_times_ns
    counts = timing.chunk_tokens
    carried = [max(0, counts[i]) if i < len(counts) else 1 for i in range(len(times))]
    total = sum(carried)
    if total <= 0:
        return {(timing.end_ns - origin) // NS_PER_S: output}
    buckets: dict[int, int] = {}
    counted = 0
    for second in sorted({(at - origin) // NS_PER_S for at in times}):
        seen = sum(
            n for at, n in zip(times, carried, strict=True) if (at - origin) // NS_PER_S <= second
        )
        upto = seen if total == output else (output * seen + total // 2) // total
        if upto > counted:
            buckets[second] = upto - counted
            counted = upto
    return buckets


@settings(max_examples=300, deadline=None)
@given(timings(), st.integers(0, 60), st.integers(0, 4 * NS_PER_S))
def test_arrivals_are_the_plain_count(timing: ResponseTiming, output: int, origin: int) -> None:
    buckets: dict[int, int] = {}
    add_arrivals(buckets, origin, timing, output, one_per_chunk=False)
    assert buckets == arrivals_counted_plainly(origin, timing, output)


def test_an_answer_inside_one_second_counts_every_token_there() -> None:
    second = 3 * NS_PER_S
    timing = ResponseTiming(
        send_ns=second,
        first_token_ns=second + 10,
        last_token_ns=second + 900,
        end_ns=second + 1_000,
        chunk_times_ns=(second + 10, second + 500, second + 900),
        chunk_tokens=(2, 0, 5),
    )
    buckets = {3: 1}
    add_arrivals(buckets, 0, timing, 9, one_per_chunk=False)  # the server counted 9, not 7
    assert buckets == {3: 10}


@st.composite
def records(draw: st.DrawFn) -> Record:
    sent = draw(st.integers(-NS_PER_S, 40 * NS_PER_S))
    finished = sent + draw(st.sampled_from([-5, 0, 1, NS_PER_S // 10, 3 * NS_PER_S]))
    if draw(st.booleans()):
        outcome: Completed[GenerationResponse] | Cancelled = Cancelled()
    else:
        timing = ResponseTiming(
            send_ns=sent,
            first_token_ns=sent + 7,
            last_token_ns=sent + 7,
            end_ns=max(sent, finished),
            chunk_times_ns=(sent + 7,),
            chunk_tokens=(1,),
        )
        response = GenerationResponse(
            request_id="r",
            endpoint=Endpoint.chat,
            streamed=True,
            usage=Usage(completion_tokens=1),
            streamed_tokens=1,
            streamed_token_source=TokenSource.stream,
            timing=timing,
        )
        outcome = Completed(response=response)
    return Record(
        request_id="r",
        targeted_start_ns=sent,
        dispatched_ns=sent,
        finished_ns=finished,
        outcome=outcome,
    )


@settings(max_examples=200, deadline=None)
@given(st.lists(records(), max_size=30))
def test_timeline_busy_time_is_each_request_split_at_bucket_edges(batch: list[Record]) -> None:
    width = NS_PER_S
    timeline = Timeline(origin_ns=0, width_ns=width, max_buckets=64)
    busy: dict[int, int] = {}
    for record in batch:
        timeline.add(record)
        start = max(0, record.dispatched_ns)
        end = max(start, record.finished_ns)
        for bucket in range(start // width, end // width + 1):
            inside = min(end, (bucket + 1) * width) - max(start, bucket * width)
            busy[bucket] = busy.get(bucket, 0) + max(0, inside)
    snapshot = timeline.snapshot()
    assert snapshot.interval_s == 1.0  # 64 one-second buckets hold the 44 seconds drawn
    expected = [busy.get(bucket, 0) / width for bucket in range(snapshot.buckets)]
    assert list(snapshot.concurrency_mean) == expected
    assert sum(snapshot.dispatched) == len(batch)
    completed = [r for r in batch if isinstance(r.outcome, Completed)]
    assert sum(snapshot.completed) == len(completed)
