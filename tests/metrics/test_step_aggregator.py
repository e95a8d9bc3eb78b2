"""StepAggregator: exact figures from hand-built records with known timestamps."""

from __future__ import annotations

import pickle

import pytest

from assay.core import (
    DiagnosticCode,
    Endpoint,
    Evidence,
    GenerationResponse,
    RequestEcho,
    ResponseTiming,
    Scores,
    ScoreSummary,
    TextAnswer,
    TokenSource,
    UnusableResponse,
    Usage,
    Vectors,
)
from assay.errors import ConfigError
from assay.metrics import RELATIVE_ERROR, Slo, StepAggregator, StepMetrics, TimeWindow
from assay.metrics import sketch as sketch_module
from assay.metrics.arrivals import add_spread_gaps
from assay.metrics.sketch import QuantileSketch
from assay.records import Cancelled, Completed, Errored, JudgedBy, RequestRecord

MS = 1_000_000
Record = RequestRecord[GenerationResponse]


def _streamed(
    request_id: str,
    send_ms: int,
    first_token_ms: int,
    gaps_ms: tuple[int, ...],
    tokens: tuple[int, ...] | None = None,
    usage_tokens: int | None = None,
    prompt_tokens: int | None = None,
    tail_ms: int = 0,
) -> GenerationResponse:
    """A streamed answer: first chunk at `first_token_ms`, then one chunk per gap."""
    times = [first_token_ms * MS]
    for gap in gaps_ms:
        times.append(times[-1] + gap * MS)
    chunk_tokens = tokens if tokens is not None else (1,) * len(times)
    usage = None
    if usage_tokens is not None or prompt_tokens is not None:
        usage = Usage(completion_tokens=usage_tokens, prompt_tokens=prompt_tokens)
    return GenerationResponse(
        request_id=request_id,
        endpoint=Endpoint.chat,
        streamed=True,
        answer=TextAnswer(text="x" * sum(chunk_tokens)),
        finish_reason="stop",
        usage=usage,
        content_chunks=len(times),
        streamed_tokens=sum(chunk_tokens),
        streamed_token_source=TokenSource.stream,
        terminal_seen=True,
        timing=ResponseTiming(
            send_ns=send_ms * MS,
            first_byte_ns=first_token_ms * MS,
            first_token_ns=first_token_ms * MS,
            last_token_ns=times[-1],
            end_ns=times[-1] + tail_ms * MS,
            chunk_times_ns=tuple(times),
            chunk_tokens=chunk_tokens,
        ),
    )


def _completed(response: GenerationResponse, targeted_ms: int, step: int = 0) -> Record:
    return Record(
        request_id=response.request_id,
        step=step,
        targeted_start_ns=targeted_ms * MS,
        dispatched_ns=response.timing.send_ns,
        finished_ns=response.timing.end_ns,
        outcome=Completed(response=response),
    )


def _errored(
    request_id: str,
    targeted_ms: int,
    finished_ms: int,
    code: DiagnosticCode,
    message: str,
    partial: GenerationResponse | None = None,
) -> Record:
    return Record(
        request_id=request_id,
        targeted_start_ns=targeted_ms * MS,
        dispatched_ns=targeted_ms * MS,
        finished_ns=finished_ms * MS,
        outcome=Errored(
            diagnostic=UnusableResponse(
                code=code, message=message, evidence=Evidence(http_status=200, partial=partial)
            ),
            judged_by=JudgedBy.validator,
        ),
    )


def _cancelled(request_id: str, targeted_ms: int, finished_ms: int) -> Record:
    return Record(
        request_id=request_id,
        targeted_start_ns=targeted_ms * MS,
        dispatched_ns=targeted_ms * MS,
        finished_ns=finished_ms * MS,
        outcome=Cancelled(reason="max duration reached"),
    )


def _snapshot(*records: Record, slo: Slo | None = None) -> StepMetrics:
    aggregator = StepAggregator(slo=slo)
    for record in records:
        aggregator.add(record)
    return aggregator.snapshot()


def test_single_stream_gives_exact_ttft_tpot_e2e_and_itl() -> None:
    # Sent at 1000 ms (targeted 990), first token at 1100, 3 more tokens 20 ms apart, end at 1165.
    response = _streamed("r1", send_ms=1000, first_token_ms=1100, gaps_ms=(20, 20, 20), tail_ms=5)
    metrics = _snapshot(_completed(response, targeted_ms=990))
    latency = metrics.latency
    assert latency.ttft_ms is not None
    assert latency.ttft_ms.mean == 100.0
    assert latency.e2e_ms is not None
    assert latency.e2e_ms.mean == 165.0
    assert latency.e2e_from_target_ms is not None
    assert latency.e2e_from_target_ms.mean == 175.0
    assert latency.dispatch_lag_ms is not None
    assert latency.dispatch_lag_ms.mean == 10.0
    # TPOT = (165 - 100) / (4 - 1)
    assert latency.tpot_ms is not None
    assert latency.tpot_ms.mean == pytest.approx(65 / 3)
    assert latency.itl_ms is not None
    assert (latency.itl_ms.count, latency.itl_ms.min, latency.itl_ms.max) == (3, 20.0, 20.0)
    assert metrics.tokens.output_per_request is not None
    assert metrics.tokens.output_per_request.mean == 4.0


def test_chunk_of_several_tokens_spreads_its_gap_over_each_token() -> None:
    # Second chunk: 30 ms after the first, 3 tokens -> three 10 ms samples; then 5 ms, 1 token.
    response = _streamed("r1", 0, 50, gaps_ms=(30, 5), tokens=(1, 3, 1))
    metrics = _snapshot(_completed(response, targeted_ms=0))
    itl = metrics.latency.itl_ms
    assert itl is not None
    assert (itl.count, itl.min, itl.max) == (4, 5.0, 10.0)
    assert itl.mean == pytest.approx((10 * 3 + 5) / 4)
    assert abs(itl.p50 - 10.0) <= 10.0 * RELATIVE_ERROR


def test_single_token_answer_has_no_tpot_and_no_itl() -> None:
    response = _streamed("r1", 0, 40, gaps_ms=())
    metrics = _snapshot(_completed(response, targeted_ms=0))
    assert metrics.latency.tpot_ms is None
    assert metrics.latency.itl_ms is None
    assert metrics.latency.ttft_ms is not None
    assert metrics.latency.ttft_ms.mean == 40.0


def test_errored_requests_count_in_attempted_figures_and_errors_only() -> None:
    good = _streamed("ok", 0, 100, gaps_ms=(10,) * 9)  # 10 tokens, ends at 190 ms
    partial = _streamed("bad", 0, 30, gaps_ms=(10,) * 4)  # 5 tokens before the drop
    metrics = _snapshot(
        _completed(good, targeted_ms=0),
        _errored(
            "bad",
            0,
            200,
            DiagnosticCode.stream_interrupted,
            "connection reset after 5 tokens",
            partial=partial,
        ),
    )
    assert metrics.outcomes.model_dump() == {
        "dispatched": 2,
        "completed": 1,
        "errored": 1,
        "cancelled": 0,
    }
    # The errored request's fast 30 ms first token does not leak into TTFT.
    assert metrics.latency.ttft_ms is not None
    assert (metrics.latency.ttft_ms.count, metrics.latency.ttft_ms.min) == (1, 100.0)
    throughput = metrics.throughput
    assert throughput.duration_s == pytest.approx(0.2)
    assert throughput.usable_output_tokens == 10
    assert throughput.attempted_output_tokens == 15
    assert throughput.usable_requests_per_s == pytest.approx(5.0)
    assert throughput.attempted_requests_per_s == pytest.approx(10.0)
    assert throughput.usable_output_tokens_per_s == pytest.approx(50.0)
    assert throughput.attempted_output_tokens_per_s == pytest.approx(75.0)
    assert metrics.error_rate == 0.5


@pytest.mark.parametrize(
    ("code", "reported"),
    [
        (DiagnosticCode.impossible_usage, -1_000_000),
        (DiagnosticCode.impossible_usage, 10**12),
        (DiagnosticCode.empty_response, 128),
    ],
)
def test_usage_rejected_by_the_validators_never_reaches_attempted_throughput(
    code: DiagnosticCode, reported: int
) -> None:
    # Issue 9: -1,000,000 completion tokens gave -481,206,770 tok/s; 10**12 gave 5.3e14.
    good = _streamed("ok", 0, 100, gaps_ms=(10,) * 9)  # 10 tokens, ends at 190 ms
    lying = _streamed("bad", 0, 30, gaps_ms=(10,), usage_tokens=reported)  # 2 chunks streamed
    metrics = _snapshot(
        _completed(good, targeted_ms=0),
        _errored("bad", 0, 200, code, "impossible", partial=lying),
    )
    assert metrics.throughput.usable_output_tokens == 10
    assert metrics.throughput.attempted_output_tokens == 12


def test_errors_by_code_count_each_code_and_keep_the_first_message() -> None:
    metrics = _snapshot(
        _errored("a", 0, 5, DiagnosticCode.empty_response, "empty response payload: no text"),
        _errored("b", 1, 6, DiagnosticCode.empty_response, "empty response payload again"),
        _errored("c", 2, 7, DiagnosticCode.http_status, "HTTP 503: server overloaded"),
        _cancelled("d", 3, 8),
    )
    errors = metrics.errors_by_code
    assert set(errors) == {DiagnosticCode.empty_response, DiagnosticCode.http_status}
    assert errors[DiagnosticCode.empty_response].count == 2
    assert errors[DiagnosticCode.empty_response].example == "empty response payload: no text"
    assert errors[DiagnosticCode.http_status].count == 1
    assert metrics.outcomes.cancelled == 1
    assert metrics.outcomes.dispatched == 4
    assert metrics.error_rate == 1.0
    assert metrics.latency.e2e_ms is None
    assert metrics.latency.dispatch_lag_ms is not None  # the client is measured on every request


def test_window_counts_only_targeted_starts_inside_it() -> None:
    aggregator = StepAggregator(window=TimeWindow(start_ns=100 * MS, end_ns=300 * MS))
    for i, targeted in enumerate((50, 100, 200, 299, 300, 400)):
        response = _streamed(f"r{i}", targeted, targeted + 20, gaps_ms=(10,))
        aggregator.add(_completed(response, targeted_ms=targeted))
    metrics = aggregator.snapshot()
    assert metrics.outcomes.completed == 3
    assert metrics.excluded == 3
    assert metrics.throughput.duration_s == pytest.approx(0.2)
    assert metrics.throughput.usable_requests_per_s == pytest.approx(15.0)
    assert (metrics.start_ns, metrics.end_ns) == (100 * MS, 300 * MS)


def test_goodput_counts_completed_requests_meeting_every_slo() -> None:
    fast = _streamed("fast", 0, 50, gaps_ms=(10, 10))  # ttft 50, worst gap 10
    slow_first = _streamed("slow", 0, 300, gaps_ms=(10, 10))  # ttft 300
    stalled = _streamed("stall", 0, 50, gaps_ms=(10, 200))  # one 200 ms gap
    failed = _errored("err", 0, 100, DiagnosticCode.truncated_stream, "no [DONE] and no reason")
    slo = Slo(ttft_ms=100, itl_ms=50)
    metrics = _snapshot(
        _completed(fast, 0), _completed(slow_first, 0), _completed(stalled, 0), failed, slo=slo
    )
    goodput = metrics.goodput
    assert goodput is not None
    assert goodput.good == 1
    assert goodput.fraction == 0.25
    assert goodput.requests_per_s == pytest.approx(1 / metrics.throughput.duration_s)
    assert _snapshot(_completed(fast, 0)).goodput is None


def test_token_sources_say_where_each_output_count_came_from() -> None:
    with_usage = _streamed("u", 0, 10, gaps_ms=(5, 5), usage_tokens=3, prompt_tokens=21)
    without = _streamed("s", 0, 10, gaps_ms=(5,))
    metrics = _snapshot(
        _completed(with_usage, 0), _completed(with_usage, 0), _completed(without, 0)
    )
    tokens = metrics.tokens
    assert tokens.output_sources == {TokenSource.usage: 2, TokenSource.stream: 1}
    assert tokens.prompt_reported == 2
    assert tokens.prompt_per_request is not None
    assert tokens.prompt_per_request.mean == 21.0
    assert tokens.output_source_note == "server usage 2, streamed count 1"


def test_mean_concurrency_is_in_flight_time_over_duration() -> None:
    # Two 100 ms requests overlapping by 50 ms over a 150 ms step.
    first = _streamed("a", 0, 50, gaps_ms=(50,))
    second = _streamed("b", 50, 100, gaps_ms=(50,))
    metrics = _snapshot(_completed(first, 0), _completed(second, 50))
    assert metrics.concurrency.mean == pytest.approx(200 / 150)
    assert metrics.concurrency.max == 2


def test_merge_of_two_processes_equals_one_aggregator() -> None:
    records = [
        _completed(_streamed(f"r{i}", i * 7, i * 7 + 40 + i % 5, gaps_ms=(8, 9, 11)), i * 7)
        for i in range(40)
    ]
    records.append(_errored("e", 3, 90, DiagnosticCode.http_status, "HTTP 429: rate limited"))
    slo = Slo(e2e_ms=75)
    whole = StepAggregator(slo=slo)
    left, right = StepAggregator(slo=slo), StepAggregator(slo=slo)
    for i, record in enumerate(records):
        whole.add(record)
        (left if i % 3 else right).add(record)
    left.merge(right)
    merged, single = left.snapshot(), whole.snapshot()
    assert merged.outcomes == single.outcomes
    assert merged.errors_by_code == single.errors_by_code
    assert merged.goodput == single.goodput
    assert merged.throughput == single.throughput
    assert merged.latency.ttft_ms is not None
    assert single.latency.ttft_ms is not None
    assert merged.latency.ttft_ms.p99 == single.latency.ttft_ms.p99
    assert merged.latency.ttft_ms.mean == pytest.approx(single.latency.ttft_ms.mean)


def test_merging_aggregators_with_different_slos_is_misuse() -> None:
    with pytest.raises(ConfigError, match="different SLOs"):
        StepAggregator(slo=Slo(ttft_ms=100)).merge(StepAggregator())


def test_snapshot_round_trips_through_json() -> None:
    response = _streamed("r1", 0, 100, gaps_ms=(20, 20), usage_tokens=3)
    metrics = _snapshot(
        _completed(response, 0),
        _errored("e", 0, 10, DiagnosticCode.invalid_json, "data line is not JSON: 'data: {'"),
        slo=Slo(ttft_ms=500),
    )
    assert StepMetrics.model_validate_json(metrics.model_dump_json()) == metrics


def test_empty_step_snapshot_has_zero_rates() -> None:
    metrics = StepAggregator().snapshot()
    assert metrics.outcomes.dispatched == 0
    assert metrics.throughput.usable_requests_per_s == 0.0
    assert metrics.latency.ttft_ms is None


def test_aggregator_survives_pickling_between_processes() -> None:
    worker = StepAggregator(slo=Slo(ttft_ms=100))
    worker.add(_completed(_streamed("r1", 0, 50, gaps_ms=(10, 10)), 0))
    worker.add(_errored("e1", 0, 30, DiagnosticCode.timeout_idle, "no bytes for 30 s"))
    received: StepAggregator = pickle.loads(pickle.dumps(worker))
    parent = StepAggregator(slo=Slo(ttft_ms=100))
    parent.merge(received)
    assert parent.snapshot() == worker.snapshot()


def _whole(
    request_id: str,
    send_ms: int,
    end_ms: int,
    endpoint: Endpoint = Endpoint.chat,
    usage: Usage | None = None,
) -> GenerationResponse:
    """A non-streamed answer: the body arrived at `end_ms`, every token with it."""
    return GenerationResponse(
        request_id=request_id,
        endpoint=endpoint,
        streamed=False,
        answer=Vectors() if endpoint is Endpoint.embeddings else TextAnswer(text="x" * 16),
        finish_reason=None if endpoint is Endpoint.embeddings else "stop",
        usage=usage if usage is not None else Usage(prompt_tokens=8, completion_tokens=16),
        terminal_seen=True,
        timing=ResponseTiming(
            send_ns=send_ms * MS,
            first_byte_ns=end_ms * MS,
            first_token_ns=end_ms * MS,
            first_content_ns=end_ms * MS,
            last_token_ns=end_ms * MS,
            end_ns=end_ms * MS,
        ),
    )


def test_non_streamed_answers_have_no_ttft_itl_or_tpot_rather_than_zero() -> None:
    # Issue 10 item 13: the whole body arrives at once, so TPOT came out as 0.00 ms.
    records = [_completed(_whole(f"r{i}", i * 10, i * 10 + 80), i * 10) for i in range(5)]
    metrics = _snapshot(*records)
    latency = metrics.latency
    assert (latency.ttft_ms, latency.itl_ms, latency.tpot_ms) == (None, None, None)
    assert latency.not_streamed == 5
    assert latency.e2e_ms is not None
    assert latency.e2e_ms.mean == 80.0
    assert metrics.tokens.output_per_request is not None
    assert metrics.tokens.output_per_request.mean == 16.0


def test_non_streamed_answer_meets_a_ttft_slo_by_its_e2e() -> None:
    fast = _completed(_whole("fast", 0, 50), 0)
    slow = _completed(_whole("slow", 0, 150), 0)
    metrics = _snapshot(fast, slow, slo=Slo(ttft_ms=100, tpot_ms=1))
    assert metrics.goodput is not None
    assert metrics.goodput.good == 1


def test_embeddings_have_no_output_token_figures_and_no_token_timing() -> None:
    usage = Usage(prompt_tokens=12, total_tokens=12)
    records = [
        _completed(_whole(f"e{i}", i, i + 30, Endpoint.embeddings, usage), i) for i in range(4)
    ]
    metrics = _snapshot(*records)
    assert metrics.tokens.embeddings == 4
    assert metrics.tokens.output_per_request is None
    assert metrics.tokens.output_sources == {}
    assert metrics.tokens.prompt_reported == 4
    assert metrics.latency.ttft_ms is None
    assert metrics.latency.tpot_ms is None
    assert metrics.throughput.usable_output_tokens == 0


def test_tokens_coalesced_in_one_read_spread_the_read_gap_instead_of_zero_gaps() -> None:
    # Issue 10 item 13: 8 one-token chunks; chunks 2-4 came in one read 30 ms after the first,
    # chunks 5-8 in one read 40 ms later. Zero gaps made ITL p50 read 0.00 ms.
    response = _streamed("r1", 0, 50, gaps_ms=(30, 0, 0, 40, 0, 0, 0))
    metrics = _snapshot(_completed(response, targeted_ms=0))
    itl = metrics.latency.itl_ms
    assert itl is not None
    assert itl.count == 7
    assert itl.min == 10.0
    assert itl.max == 10.0
    assert metrics.latency.itl_coalesced_gaps == 5
    # The mean ITL is unchanged by the choice: the 70 ms from first to last token over 7 gaps.
    assert itl.mean == pytest.approx(70 / 7)


def test_tokens_read_with_the_first_token_belong_to_ttft() -> None:
    response = _streamed("r1", 0, 50, gaps_ms=(0, 0, 20))
    metrics = _snapshot(_completed(response, targeted_ms=0))
    itl = metrics.latency.itl_ms
    assert itl is not None
    assert (itl.count, itl.min, itl.max) == (1, 20.0, 20.0)
    assert metrics.latency.itl_coalesced_gaps == 2


def test_every_chunk_in_one_read_samples_no_itl_and_coalesces_all_but_the_first() -> None:
    # A fast server's short answer comes in one read (the aggregator's shortcut for it); the
    # figures are those of the general path, `add_spread_gaps`, on the same chunks, and the
    # SLO judges the record by its TTFT and TPOT with a worst gap of zero.
    response = _streamed("r1", 0, 50, gaps_ms=(0,) * 15, usage_tokens=16)
    sketch = QuantileSketch()
    assert add_spread_gaps(sketch, response.timing.chunk_times_ns, (1,) * 16) == (0.0, 15)
    aggregator = StepAggregator(slo=Slo(ttft_ms=60, itl_ms=1))
    aggregator.add(_completed(response, targeted_ms=0))
    metrics = aggregator.snapshot()
    assert metrics.latency.itl_ms is None
    assert sketch.count == 0
    assert metrics.latency.itl_coalesced_gaps == 15
    assert metrics.goodput is not None
    assert metrics.goodput.good == 1


def test_one_chunk_per_read_counts_no_coalesced_gaps() -> None:
    response = _streamed("r1", 0, 50, gaps_ms=(10, 10, 10))
    metrics = _snapshot(_completed(response, targeted_ms=0))
    assert metrics.latency.itl_coalesced_gaps == 0


def test_merge_sums_not_streamed_coalesced_and_embedding_counts() -> None:
    left, right = StepAggregator(), StepAggregator()
    left.add(_completed(_whole("w", 0, 40), 0))
    left.add(_completed(_streamed("s", 0, 50, gaps_ms=(0, 10)), 0))
    right.add(_completed(_whole("e", 0, 30, Endpoint.embeddings, Usage(prompt_tokens=3)), 0))
    right.add(_completed(_streamed("t", 0, 50, gaps_ms=(10, 0)), 0))
    left.merge(right)
    merged = left.snapshot()
    assert merged.latency.not_streamed == 2
    assert merged.latency.itl_coalesced_gaps == 2
    assert merged.tokens.embeddings == 1


def _scored(documents: int, request_id: str) -> RequestRecord[GenerationResponse]:
    response = GenerationResponse(
        request_id=request_id,
        endpoint=Endpoint.rerank,
        streamed=False,
        echo=RequestEcho(documents=documents, expected_results=documents),
        answer=Scores(
            summary=ScoreSummary(count=documents, lowest_index=0, highest_index=documents - 1)
        ),
        usage=Usage(prompt_tokens=10 * documents, total_tokens=10 * documents),
        terminal_seen=True,
        timing=ResponseTiming(send_ns=0, end_ns=500_000_000),
    )
    return RequestRecord[GenerationResponse](
        request_id=request_id,
        targeted_start_ns=0,
        dispatched_ns=0,
        finished_ns=500_000_000,
        outcome=Completed(response=response),
    )


def test_rerank_answers_count_their_documents_not_output_tokens() -> None:
    first, second = StepAggregator(), StepAggregator()
    first.add(_scored(8, "r1"))
    second.add(_scored(4, "r2"))
    first.merge(second)
    metrics = first.snapshot()
    assert metrics.tokens.scored == 2
    assert metrics.tokens.output_per_request is None
    assert metrics.throughput.usable_documents == 12
    assert metrics.throughput.usable_documents_per_s == pytest.approx(24.0)  # over 0.5 s
    assert metrics.throughput.usable_output_tokens == 0
    assert metrics.latency.ttft_ms is None
    assert metrics.latency.e2e_ms is not None
    assert metrics.latency.e2e_ms.count == 2


def test_many_records_keep_every_sketchs_unfolded_values_bounded_and_exact() -> None:
    # `add` appends a record's figures to the sketches' kept values and folds them all when the
    # dispatch lag's are due: none may keep more than FOLD_EVERY, and the figures must
    # equal those of sketches fed one `QuantileSketch.add` at a time.
    count = sketch_module.FOLD_EVERY * 2 + 7
    aggregator = StepAggregator()
    e2e = QuantileSketch()
    ttft = QuantileSketch()
    for i in range(count):
        response = _streamed(f"r{i}", i, i + 3 + i % 5, (2 + i % 3, 1), usage_tokens=3)
        aggregator.add(_completed(response, i))
        e2e.add(response.timing.end_ns - response.timing.send_ns)
        ttft.add((3 + i % 5) * MS)
        for name in aggregator.__slots__:
            value = getattr(aggregator, name)
            if isinstance(value, QuantileSketch):
                assert len(value._pending) <= sketch_module.FOLD_EVERY, name
    latency = aggregator.snapshot().latency
    assert latency.e2e_ms == e2e.summary(1e-6)
    assert latency.ttft_ms == ttft.summary(1e-6)
