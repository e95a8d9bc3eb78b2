"""The figures peers print, from hand-built records with known timestamps: input and total token
throughput, peak output tokens/s in one-second buckets, time to second token, decode time and
per-user output tokens/s."""

from __future__ import annotations

import pytest

from assay.core import (
    DiagnosticCode,
    Endpoint,
    Evidence,
    GenerationResponse,
    ResponseTiming,
    TextAnswer,
    TokenSource,
    UnusableResponse,
    Usage,
)
from assay.errors import ConfigError
from assay.metrics import RELATIVE_ERROR, StepAggregator, TimeWindow
from assay.records import Completed, Errored, JudgedBy, RequestRecord

MS = 1_000_000
S = 1_000_000_000
Record = RequestRecord[GenerationResponse]


def _answer(
    send_ns: int,
    chunk_times_ns: tuple[int, ...],
    chunk_tokens: tuple[int, ...] | None = None,
    *,
    completion_tokens: int | None = None,
    prompt_tokens: int | None = None,
    tail_ns: int = 0,
    request_id: str = "r",
) -> Record:
    """A completed streamed chat answer with the given chunk arrivals, ending `tail_ns` after
    its last chunk."""
    tokens = chunk_tokens if chunk_tokens is not None else (1,) * len(chunk_times_ns)
    usage = None
    if completion_tokens is not None or prompt_tokens is not None:
        usage = Usage(completion_tokens=completion_tokens, prompt_tokens=prompt_tokens)
    end_ns = chunk_times_ns[-1] + tail_ns
    response = GenerationResponse(
        request_id=request_id,
        endpoint=Endpoint.chat,
        streamed=True,
        answer=TextAnswer(text="x" * sum(tokens)),
        finish_reason="stop",
        usage=usage,
        content_chunks=len(chunk_times_ns),
        streamed_tokens=sum(tokens),
        streamed_token_source=TokenSource.stream,
        terminal_seen=True,
        timing=ResponseTiming(
            send_ns=send_ns,
            first_token_ns=chunk_times_ns[0],
            last_token_ns=chunk_times_ns[-1],
            end_ns=end_ns,
            chunk_times_ns=chunk_times_ns,
            chunk_tokens=tokens,
        ),
    )
    return Record(
        request_id=request_id,
        targeted_start_ns=send_ns,
        dispatched_ns=send_ns,
        finished_ns=end_ns,
        outcome=Completed(response=response),
    )


def _whole(send_ns: int, end_ns: int, completion_tokens: int, prompt_tokens: int) -> Record:
    """A completed non-streamed answer: its tokens all arrive with the end of the body."""
    response = GenerationResponse(
        request_id="whole",
        endpoint=Endpoint.chat,
        streamed=False,
        answer=TextAnswer(text="x" * completion_tokens),
        finish_reason="stop",
        usage=Usage(completion_tokens=completion_tokens, prompt_tokens=prompt_tokens),
        terminal_seen=True,
        timing=ResponseTiming(
            send_ns=send_ns, first_token_ns=end_ns, last_token_ns=end_ns, end_ns=end_ns
        ),
    )
    return Record(
        request_id="whole",
        targeted_start_ns=send_ns,
        dispatched_ns=send_ns,
        finished_ns=end_ns,
        outcome=Completed(response=response),
    )


def test_input_and_total_token_rates_use_the_servers_prompt_counts() -> None:
    aggregator = StepAggregator(window=TimeWindow(start_ns=0, end_ns=2 * S))
    aggregator.add(_answer(0, (100 * MS, 200 * MS), prompt_tokens=30))
    aggregator.add(_answer(MS, (300 * MS, 400 * MS, 500 * MS), prompt_tokens=50))
    throughput = aggregator.snapshot().throughput
    assert throughput.usable_input_tokens == 80
    assert throughput.usable_input_tokens_per_s == pytest.approx(40.0)
    assert throughput.usable_output_tokens == 5
    assert throughput.usable_total_tokens_per_s == pytest.approx((80 + 5) / 2)


def test_input_rate_is_not_measured_when_a_completed_request_had_no_prompt_count() -> None:
    aggregator = StepAggregator()
    aggregator.add(_answer(0, (100 * MS, 200 * MS), prompt_tokens=30))
    aggregator.add(_answer(0, (100 * MS, 200 * MS)))  # no usage at all
    throughput = aggregator.snapshot().throughput
    assert throughput.usable_input_tokens is None
    assert throughput.usable_input_tokens_per_s is None
    assert throughput.usable_total_tokens_per_s is None


def test_errored_requests_prompts_do_not_count_as_input() -> None:
    aggregator = StepAggregator()
    aggregator.add(_answer(0, (100 * MS, 200 * MS), prompt_tokens=30))
    failure = UnusableResponse(
        code=DiagnosticCode.http_status, message="HTTP 500", evidence=Evidence(http_status=500)
    )
    aggregator.add(
        Record(
            request_id="e",
            targeted_start_ns=0,
            dispatched_ns=0,
            finished_ns=S,
            outcome=Errored(diagnostic=failure, judged_by=JudgedBy.transport),
        )
    )
    assert aggregator.snapshot().throughput.usable_input_tokens == 30


def test_peak_output_rate_is_the_fullest_one_second_bucket_from_the_steps_start() -> None:
    origin = 5 * S
    aggregator = StepAggregator(origin_ns=origin)
    # Bucket 0 holds 2 tokens, bucket 1 holds 3 (one from each answer), bucket 2 holds 1.
    aggregator.add(_answer(origin, (origin + 100 * MS, origin + 900 * MS, origin + 1100 * MS)))
    aggregator.add(_answer(origin, (origin + 1200 * MS, origin + 1999 * MS, origin + 2000 * MS)))
    throughput = aggregator.snapshot().throughput
    assert throughput.peak_output_tokens_per_s == 3
    assert throughput.peak_output_at_s == 1.0


def test_peak_buckets_start_at_the_measured_windows_start() -> None:
    # From the window's start (0.5 s) the three tokens share bucket 0: [0.5 s, 1.5 s).
    aggregator = StepAggregator(window=TimeWindow(start_ns=500 * MS, end_ns=10 * S), origin_ns=0)
    aggregator.add(_answer(500 * MS, (600 * MS, 1100 * MS, 1400 * MS)))
    throughput = aggregator.snapshot().throughput
    assert throughput.peak_output_tokens_per_s == 3
    assert throughput.peak_output_at_s == 0.0


def test_peak_buckets_spread_the_servers_count_over_the_chunks_and_add_up_to_the_output() -> None:
    # Two chunks counted one token each, the server's usage says 20: 10 per chunk, in buckets
    # 0 and 1 (by the chunks' own counts the peak would be the 7 of bucket 2).
    aggregator = StepAggregator(origin_ns=0)
    aggregator.add(_answer(0, (100 * MS, 1100 * MS), completion_tokens=20))
    # A non-streamed answer's 7 tokens all arrive with its end, in bucket 2.
    aggregator.add(_whole(0, 2500 * MS, completion_tokens=7, prompt_tokens=3))
    metrics = aggregator.snapshot()
    assert metrics.throughput.peak_output_tokens_per_s == 10
    assert metrics.throughput.peak_output_at_s == 0.0
    assert metrics.throughput.usable_output_tokens == 27


def test_spread_tokens_round_so_the_buckets_add_up_to_the_servers_count() -> None:
    # 7 tokens over 3 chunks of one token, one chunk per second: 2, 3 (rounded) and 2.
    aggregator = StepAggregator(origin_ns=0)
    aggregator.add(_answer(0, (100 * MS, 1100 * MS, 2100 * MS), completion_tokens=7))
    throughput = aggregator.snapshot().throughput
    assert (throughput.peak_output_tokens_per_s, throughput.peak_output_at_s) == (3, 1.0)


def test_a_tie_for_the_peak_names_the_earliest_second() -> None:
    aggregator = StepAggregator(origin_ns=0)
    aggregator.add(_answer(0, (3 * S + 1, 3 * S + 2)))
    aggregator.add(_answer(0, (S + 1, S + 2)))
    throughput = aggregator.snapshot().throughput
    assert throughput.peak_output_tokens_per_s == 2
    assert throughput.peak_output_at_s == 1.0


def test_no_completed_answer_means_no_peak_and_no_per_user_rate() -> None:
    throughput = StepAggregator().snapshot().throughput
    assert throughput.peak_output_tokens_per_s is None
    assert throughput.per_user_output_tokens_per_s is None


def test_time_to_second_token_is_from_the_first_token_to_the_second() -> None:
    aggregator = StepAggregator()
    aggregator.add(_answer(0, (100 * MS, 130 * MS, 140 * MS)))
    aggregator.add(_answer(0, (200 * MS, 250 * MS)))
    ttst = aggregator.snapshot().latency.ttst_ms
    assert ttst is not None
    assert (ttst.count, ttst.min, ttst.max) == (2, 30.0, 50.0)


def test_two_tokens_in_the_first_read_give_a_time_to_second_token_of_zero() -> None:
    aggregator = StepAggregator()
    aggregator.add(_answer(0, (100 * MS, 150 * MS), (2, 1)))
    ttst = aggregator.snapshot().latency.ttst_ms
    assert ttst is not None
    assert (ttst.count, ttst.max) == (1, 0.0)


def test_a_one_token_answer_has_ttft_and_decode_but_no_ttst_tpot_or_per_user_rate() -> None:
    aggregator = StepAggregator()
    aggregator.add(_answer(0, (100 * MS,), tail_ns=5 * MS))
    metrics = aggregator.snapshot()
    assert metrics.latency.ttft_ms is not None
    assert metrics.latency.ttft_ms.count == 1
    assert metrics.latency.decode_ms is not None
    assert metrics.latency.decode_ms.max == 5.0
    assert metrics.latency.ttst_ms is None
    assert metrics.latency.tpot_ms is None
    assert metrics.throughput.per_user_output_tokens_per_s is None
    assert metrics.throughput.peak_output_tokens_per_s == 1


def test_decode_time_and_ttft_split_the_e2e_of_streamed_answers() -> None:
    aggregator = StepAggregator()
    aggregator.add(_answer(0, (100 * MS, 200 * MS, 300 * MS), tail_ns=10 * MS))
    aggregator.add(_answer(0, (50 * MS, 60 * MS)))
    latency = aggregator.snapshot().latency
    assert latency.decode_ms is not None
    assert latency.ttft_ms is not None
    assert latency.e2e_ms is not None
    assert latency.decode_ms.count == latency.ttft_ms.count == 2
    assert latency.decode_ms.mean + latency.ttft_ms.mean == pytest.approx(latency.e2e_ms.mean)
    assert (latency.decode_ms.min, latency.decode_ms.max) == (10.0, 210.0)


def test_per_user_rate_is_decode_tokens_over_decode_time() -> None:
    aggregator = StepAggregator()
    # 5 tokens: 4 after the first, over 200 ms of decode -> 20 tok/s.
    aggregator.add(_answer(0, (100 * MS, 150 * MS, 200 * MS, 250 * MS, 300 * MS)))
    # Server usage 11 tokens over two chunks, 1 s of decode -> 10 tok/s.
    aggregator.add(_answer(0, (100 * MS, 1100 * MS), completion_tokens=11))
    per_user = aggregator.snapshot().throughput.per_user_output_tokens_per_s
    assert per_user is not None
    assert per_user.count == 2
    assert per_user.min == pytest.approx(10.0)
    assert per_user.max == pytest.approx(20.0)
    assert per_user.p50 == pytest.approx(10.0, rel=RELATIVE_ERROR)


def test_new_figures_merge_as_if_one_aggregator_had_seen_every_record() -> None:
    records = [
        _answer(0, (100 * MS, 130 * MS, 1200 * MS), prompt_tokens=4, request_id="a"),
        _answer(0, (150 * MS, 1300 * MS), prompt_tokens=6, request_id="b"),
        _answer(0, (1400 * MS, 1500 * MS, 1600 * MS), prompt_tokens=8, request_id="c"),
    ]
    whole = StepAggregator(origin_ns=0)
    left, right = StepAggregator(origin_ns=0), StepAggregator(origin_ns=0)
    for index, record in enumerate(records):
        whole.add(record)
        (left if index % 2 else right).add(record)
    left.merge(right)
    merged, single = left.snapshot(), whole.snapshot()
    for snapshot in (merged, single):
        throughput, latency = snapshot.throughput, snapshot.latency
        assert (throughput.peak_output_tokens_per_s, throughput.peak_output_at_s) == (5, 1.0)
        assert throughput.usable_input_tokens == 18
        per_user = throughput.per_user_output_tokens_per_s
        assert per_user is not None
        assert per_user.count == 3
        assert per_user.min == pytest.approx(1 / 1.15)
        assert latency.ttst_ms is not None
        assert latency.ttst_ms.count == 3
        assert (latency.ttst_ms.min, latency.ttst_ms.max) == (30.0, 1150.0)
        assert latency.decode_ms is not None
        assert latency.decode_ms.count == 3


def test_aggregators_of_different_bucket_origins_do_not_merge() -> None:
    with pytest.raises(ConfigError, match="origins"):
        StepAggregator(origin_ns=0).merge(StepAggregator(origin_ns=S))


def test_warm_up_and_cool_down_records_add_to_no_new_figure() -> None:
    window = TimeWindow(start_ns=S, end_ns=3 * S)
    aggregator = StepAggregator(window=window, origin_ns=0)
    aggregator.add(_answer(S, (S + 100 * MS, S + 200 * MS), prompt_tokens=5))
    # Targeted before and after the window: excluded, whatever their tokens.
    aggregator.add(_answer(0, (S + 300 * MS, S + 400 * MS, S + 500 * MS), prompt_tokens=50))
    aggregator.add(_answer(3 * S, (3 * S + 100 * MS,) * 3, prompt_tokens=50))
    metrics = aggregator.snapshot()
    assert metrics.excluded == 2
    assert metrics.throughput.usable_input_tokens == 5
    assert metrics.throughput.peak_output_tokens_per_s == 2
    assert metrics.latency.ttst_ms is not None
    assert metrics.latency.ttst_ms.count == 1
