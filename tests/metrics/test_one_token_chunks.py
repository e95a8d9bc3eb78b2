"""Answers of one token per chunk take the aggregator's short path; it gives the figures of the
general one, which counts tokens chunk by chunk."""

from __future__ import annotations

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from assay.core import Endpoint, GenerationResponse, ResponseTiming, TokenSource, Usage
from assay.metrics import StepAggregator
from assay.metrics.arrivals import add_arrivals, second_token_ns
from assay.records import Completed, RequestRecord
from assay.spec.constraints import NS_PER_S

Record = RequestRecord[GenerationResponse]


@st.composite
def one_token_timings(draw: st.DrawFn, min_gap: int = 0) -> ResponseTiming:
    """One token per chunk; chunks `min_gap` ns apart or more (0: some share a read)."""
    send = draw(st.integers(0, 5 * NS_PER_S))
    gaps = draw(st.lists(st.integers(min_gap, NS_PER_S // 2), max_size=40))
    times = tuple(itertools.accumulate(gaps, initial=send + draw(st.integers(0, NS_PER_S))))
    return ResponseTiming(
        send_ns=send,
        first_token_ns=times[0],
        last_token_ns=times[-1],
        end_ns=times[-1] + 1,
        chunk_times_ns=times,
        chunk_tokens=(1,) * len(times),
    )


@settings(max_examples=200, deadline=None)
@given(one_token_timings(), st.integers(1, 80), st.integers(0, 3 * NS_PER_S))
def test_arrivals_by_second_are_those_counted_chunk_by_chunk(
    timing: ResponseTiming, output_tokens: int, origin: int
) -> None:
    short: dict[int, int] = {}
    general: dict[int, int] = {}
    add_arrivals(short, origin, timing, output_tokens, one_per_chunk=True)
    add_arrivals(general, origin, timing, output_tokens, one_per_chunk=False)
    assert short == general


@settings(max_examples=200, deadline=None)
@given(one_token_timings())
def test_second_token_is_the_second_chunk(timing: ResponseTiming) -> None:
    times = timing.chunk_times_ns
    assert second_token_ns(timing) == (times[1] if len(times) > 1 else None)


@settings(max_examples=100, deadline=None)
@given(st.lists(one_token_timings(min_gap=1), min_size=1, max_size=12))
def test_itl_of_one_token_chunks_is_one_sample_per_gap(timings: list[ResponseTiming]) -> None:
    aggregator = StepAggregator()
    gaps: list[int] = []
    for index, timing in enumerate(timings):
        times = timing.chunk_times_ns
        response = GenerationResponse(
            request_id=f"r{index}",
            endpoint=Endpoint.chat,
            streamed=True,
            usage=Usage(completion_tokens=len(times)),
            streamed_tokens=len(times),
            streamed_token_source=TokenSource.stream,
            timing=timing,
        )
        aggregator.add(
            Record(
                request_id=f"r{index}",
                targeted_start_ns=timing.send_ns,
                dispatched_ns=timing.send_ns,
                finished_ns=timing.end_ns,
                outcome=Completed(response=response),
            )
        )
        gaps += [b - a for a, b in itertools.pairwise(times)]
    latency = aggregator.snapshot().latency
    if gaps:
        assert latency.itl_ms is not None
        assert latency.itl_ms.count == len(gaps)
        assert latency.itl_ms.min == min(gaps) * 1e-6
        assert latency.itl_ms.max == max(gaps) * 1e-6
    else:
        assert latency.itl_ms is None
    second_gaps = [
        t.chunk_times_ns[1] - t.chunk_times_ns[0] for t in timings if len(t.chunk_times_ns) > 1
    ]
    if second_gaps:
        assert latency.ttst_ms is not None
        assert latency.ttst_ms.count == len(second_gaps)
        assert latency.ttst_ms.max == max(second_gaps) * 1e-6
    else:
        assert latency.ttst_ms is None
