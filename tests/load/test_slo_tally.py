"""Each attempted request's misses of the percentile SLOs, from hand-built records."""

from __future__ import annotations

from assay.core import (
    DiagnosticCode,
    Endpoint,
    Evidence,
    GenerationResponse,
    ResponseTiming,
    TextAnswer,
    TokenSource,
    UnusableResponse,
)
from assay.load.slo_tally import SloMisses, SloTally
from assay.records import Cancelled, Completed, Errored, JudgedBy, RequestRecord
from assay.spec.capacity import SloTarget

MS = 1_000_000
Record = RequestRecord[GenerationResponse]
SLOS = tuple(SloTarget.parse(text) for text in ("ttft_ms=100", "itl_ms=20", "e2e_ms=300"))


def streamed(first_token_ms: int, gaps_ms: tuple[int, ...], *, streamed: bool = True) -> Record:
    """Sent at 0 ms, first token at `first_token_ms`, one token per gap after it."""
    times = [first_token_ms * MS]
    for gap in gaps_ms:
        times.append(times[-1] + gap * MS)
    response = GenerationResponse(
        request_id="r",
        endpoint=Endpoint.chat,
        streamed=streamed,
        answer=TextAnswer(text="x" * len(times)),
        finish_reason="stop",
        content_chunks=len(times),
        streamed_tokens=len(times),
        streamed_token_source=TokenSource.stream,
        terminal_seen=True,
        timing=ResponseTiming(
            send_ns=0,
            first_token_ns=first_token_ms * MS,
            last_token_ns=times[-1],
            end_ns=times[-1],
            chunk_times_ns=tuple(times) if streamed else (),
            chunk_tokens=(1,) * len(times) if streamed else (),
        ),
    )
    return Record(
        request_id="r",
        targeted_start_ns=0,
        dispatched_ns=0,
        finished_ns=times[-1],
        outcome=Completed(response=response),
    )


def not_completed(kind: str, targeted_ms: int = 0) -> Record:
    outcome: Errored | Cancelled = (
        Cancelled()
        if kind == "cancelled"
        else Errored(
            diagnostic=UnusableResponse(
                code=DiagnosticCode(kind), message="m", evidence=Evidence(http_status=200)
            ),
            judged_by=JudgedBy.validator,
        )
    )
    return Record(
        request_id="e",
        targeted_start_ns=targeted_ms * MS,
        dispatched_ns=targeted_ms * MS,
        finished_ns=targeted_ms * MS,
        outcome=outcome,
    )


def counts(*records: Record, window: tuple[int, int | None] = (0, None)) -> SloMisses:
    tally = SloTally(SLOS, window)
    for record in records:
        tally.add(record)
    return tally.counts()


def test_a_completed_request_misses_only_the_slos_over_their_limit() -> None:
    assert counts(streamed(50, (10, 10))) == SloMisses(1, (0, 0, 0))
    assert counts(streamed(150, (10, 10))) == SloMisses(1, (1, 0, 0))  # TTFT 150 > 100
    assert counts(streamed(50, (10, 30))) == SloMisses(1, (0, 1, 0))  # worst gap 30 > 20
    assert counts(streamed(90, (19,) * 12)) == SloMisses(1, (0, 0, 1))  # E2E 318 > 300


def test_an_answer_that_came_whole_reaches_its_first_token_at_its_end() -> None:
    assert counts(streamed(50, (20, 20), streamed=False)) == SloMisses(1, (0, 0, 0))  # 90
    assert counts(streamed(90, (20,), streamed=False)) == SloMisses(1, (1, 0, 0))  # 110


def test_every_errored_code_and_a_cancellation_miss_every_slo() -> None:
    records = [not_completed(code) for code in ("empty_response", "http_status", "timeout_idle")]
    assert counts(*records, not_completed("cancelled")) == SloMisses(4, (4, 4, 4))


def test_requests_before_the_measured_window_do_not_count() -> None:
    warm = not_completed("empty_response", targeted_ms=5)
    assert counts(warm, window=(10 * MS, None)) == SloMisses(0, (0, 0, 0))


def test_requests_never_sent_are_attempted_and_miss_every_slo() -> None:
    assert counts(streamed(50, (10,))).with_not_sent(2) == SloMisses(3, (2, 2, 2))
