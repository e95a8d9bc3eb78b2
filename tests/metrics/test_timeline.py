"""Timeline: per-interval counts, bounded by doubling the width, mergeable across processes."""

from __future__ import annotations

from assay.core import (
    DiagnosticCode,
    Endpoint,
    GenerationResponse,
    ResponseTiming,
    TextAnswer,
    UnusableResponse,
    Usage,
)
from assay.metrics import Timeline
from assay.records import Cancelled, Completed, Errored, JudgedBy, RequestRecord

S = 1_000_000_000
MS = 1_000_000


def _completed(
    sent_ns: int, ttft_ns: int, end_ns: int, tokens: int
) -> RequestRecord[GenerationResponse]:
    response = GenerationResponse(
        request_id="r",
        endpoint=Endpoint.chat,
        streamed=True,
        answer=TextAnswer(text="x" * tokens),
        finish_reason="stop",
        usage=Usage(completion_tokens=tokens),
        timing=ResponseTiming(send_ns=sent_ns, first_token_ns=sent_ns + ttft_ns, end_ns=end_ns),
    )
    return RequestRecord[GenerationResponse](
        request_id="r",
        targeted_start_ns=sent_ns,
        dispatched_ns=sent_ns,
        finished_ns=end_ns,
        outcome=Completed[GenerationResponse](response=response),
    )


def _errored(sent_ns: int, end_ns: int, code: DiagnosticCode) -> RequestRecord[GenerationResponse]:
    return RequestRecord[GenerationResponse](
        request_id="e",
        targeted_start_ns=sent_ns,
        dispatched_ns=sent_ns,
        finished_ns=end_ns,
        outcome=Errored(
            diagnostic=UnusableResponse(code=code, message="bad"), judged_by=JudgedBy.validator
        ),
    )


def _cancelled(sent_ns: int, end_ns: int) -> RequestRecord[GenerationResponse]:
    return RequestRecord[GenerationResponse](
        request_id="c",
        targeted_start_ns=sent_ns,
        dispatched_ns=sent_ns,
        finished_ns=end_ns,
        outcome=Cancelled(),
    )


def test_records_land_in_the_bucket_of_their_send_and_finish_times() -> None:
    timeline = Timeline(origin_ns=10 * S, width_ns=S)
    timeline.add(_completed(10 * S + 100 * MS, 50 * MS, 11 * S + 500 * MS, tokens=7))
    timeline.add(_errored(10 * S + 200 * MS, 12 * S + 1, DiagnosticCode.empty_response))
    timeline.add(_cancelled(11 * S, 12 * S + 5))
    snapshot = timeline.snapshot()
    assert snapshot.interval_s == 1.0
    assert snapshot.origin_ns == 10 * S
    assert snapshot.dispatched == (2, 1, 0)
    assert snapshot.completed == (0, 1, 0)
    assert snapshot.output_tokens == (0, 7, 0)
    assert snapshot.errored_by_code == {"empty_response": (0, 0, 1)}
    assert snapshot.cancelled == (0, 0, 1)
    assert snapshot.ttft_ms_mean == (50.0, None, None)
    assert snapshot.ttft_ms_max == (50.0, None, None)


def test_concurrency_mean_is_the_time_averaged_number_in_flight() -> None:
    timeline = Timeline(origin_ns=0, width_ns=S)
    # One request in flight for the whole first second, a second one for its last half.
    timeline.add(_cancelled(0, S))
    timeline.add(_cancelled(S // 2, S + S // 4))
    snapshot = timeline.snapshot()
    assert snapshot.concurrency_mean == (1.5, 0.25)


def test_a_long_step_doubles_the_width_and_keeps_every_count() -> None:
    timeline = Timeline(origin_ns=0, width_ns=S, max_buckets=8)
    for second in range(100):
        timeline.add(_errored(second * S, second * S + 1, DiagnosticCode.http_status))
    snapshot = timeline.snapshot()
    assert snapshot.buckets <= 8
    assert snapshot.interval_s == 16.0
    assert sum(snapshot.dispatched) == 100
    assert sum(snapshot.errored_by_code["http_status"]) == 100
    assert snapshot.dispatched[0] == 16


def test_coarsening_keeps_the_maximum_ttft_not_a_sum() -> None:
    timeline = Timeline(origin_ns=0, width_ns=S, max_buckets=2)
    timeline.add(_completed(0, 30 * MS, S // 2, tokens=2))
    timeline.add(_completed(S, 40 * MS, S + S // 2, tokens=2))
    timeline.add(_completed(2 * S, 10 * MS, 2 * S + 1, tokens=2))
    snapshot = timeline.snapshot()
    assert snapshot.interval_s == 2.0
    assert snapshot.ttft_ms_max == (40.0, 10.0)
    assert snapshot.ttft_ms_mean == (35.0, 10.0)


def test_merging_two_processes_equals_one_timeline_of_every_record() -> None:
    records = [
        _completed(k * 300 * MS, 20 * MS + k * MS, k * 300 * MS + 700 * MS, tokens=k + 1)
        for k in range(40)
    ] + [
        _errored(k * 450 * MS, k * 450 * MS + 3 * MS, DiagnosticCode.inband_error) for k in range(9)
    ]
    whole = Timeline(origin_ns=0, width_ns=S // 4, max_buckets=16)
    left = Timeline(origin_ns=0, width_ns=S // 4, max_buckets=16)
    right = Timeline(origin_ns=0, width_ns=S // 4, max_buckets=16)
    for index, record in enumerate(records):
        whole.add(record)
        (left if index % 3 else right).add(record)
    left.merge(right)
    assert left.snapshot() == whole.snapshot()


def test_a_coarser_timeline_merges_into_a_finer_one() -> None:
    fine = Timeline(origin_ns=0, width_ns=S, max_buckets=64)
    coarse = Timeline(origin_ns=0, width_ns=S, max_buckets=4)
    fine.add(_cancelled(0, 1))
    for second in range(20):
        coarse.add(_cancelled(second * S, second * S + 1))
    fine.merge(coarse)
    snapshot = fine.snapshot()
    assert snapshot.interval_s == coarse.snapshot().interval_s
    assert sum(snapshot.dispatched) == 21
