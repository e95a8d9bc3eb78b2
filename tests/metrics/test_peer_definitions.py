"""TTFT, TPOT, ITL and E2E under five peers' definitions, checked against hand computation.

Two answers with known chunk times (ms after a send at 0):

- A: chunks at 40 (1 token), 50 (2 tokens), 80 (1 token); the stream ends at 100; usage 4.
- B: chunks at 20 (0 tokens: a running usage that did not rise), 30 (1), 60 (1); ends at 60;
  usage 2.

Every expected figure below is worked out by hand from the rules in
`assay.metrics.definitions` (and docs/report.md, which cites each peer's source).
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from assay.core import (
    Endpoint,
    GenerationResponse,
    ResponseTiming,
    TextAnswer,
    TokenSource,
    Usage,
)
from assay.metrics import StepAggregator, TimeWindow
from assay.metrics.definitions import Peer, PeerDefinitions, PeerTally
from assay.records import Completed, RequestRecord
from assay.records.jsonl import RecordWriter
from assay.reports.definitions import definitions_html, definitions_text, read_definitions
from assay.reports.report import StepReport, build_report
from assay.spec.run import RunEcho

MS = 1_000_000
NOW = datetime(2026, 1, 1, tzinfo=UTC)
Record = RequestRecord[GenerationResponse]


def _timing_a() -> ResponseTiming:
    return ResponseTiming(
        send_ns=0,
        first_token_ns=40 * MS,
        last_token_ns=80 * MS,
        end_ns=100 * MS,
        chunk_times_ns=(40 * MS, 50 * MS, 80 * MS),
        chunk_tokens=(1, 2, 1),
    )


def _timing_b() -> ResponseTiming:
    return ResponseTiming(
        send_ns=0,
        first_token_ns=20 * MS,
        last_token_ns=60 * MS,
        end_ns=60 * MS,
        chunk_times_ns=(20 * MS, 30 * MS, 60 * MS),
        chunk_tokens=(0, 1, 1),
    )


def _both() -> PeerDefinitions:
    tally = PeerTally()
    tally.add(_timing_a(), 4)
    tally.add(_timing_b(), 2)
    figures = tally.snapshot()
    assert figures is not None
    return figures


def _means(figures: PeerDefinitions, peer: Peer) -> tuple[float | None, ...]:
    of = figures.of(peer)
    return tuple(
        None if d is None else d.mean for d in (of.ttft_ms, of.tpot_ms, of.itl_ms, of.e2e_ms)
    )


# (TTFT, TPOT, ITL, E2E) means in ms, by hand.
HAND = {
    # TTFT first chunk: (40 + 20) / 2; TPOT (last - first) / (n - 1): (40/3 + 40/1) / 2;
    # ITL per chunk gap: 10, 30 | 10, 30; E2E to the last chunk: (80 + 60) / 2.
    Peer.vllm: (30.0, (40 / 3 + 40) / 2, 20.0, 70.0),
    # TTFT first content chunk: (40 + 30) / 2; TPOT (end - first) / (n - 1): (60/3 + 30) / 2;
    # ITL per content-chunk gap: 10, 30 | 30; E2E to the end: (100 + 60) / 2.
    Peer.sglang: (35.0, 25.0, 70 / 3, 80.0),
    # TPOT (last - send) / n weighted by n: (80/4 * 4 + 60/2 * 2) / 6; ITL (last - first)/(n-1)
    # weighted by n - 1: (40/3 * 3 + 40 * 1) / 4.
    Peer.guidellm: (30.0, 140 / 6, 20.0, 80.0),
    # No TPOT; ITL (last content - first content) / (n - 1): (40/3 + 30) / 2; E2E to the last
    # content chunk: (80 + 60) / 2.
    Peer.aiperf: (35.0, None, (40 / 3 + 30) / 2, 70.0),
    # Token stamps A: 40, 50, 50, 80 (gaps 10, 0, 30), B: 30, 60 (gap 30): ITL mean 70 / 4;
    # TPOT (last - first) / (n - 1): (40/3 + 30) / 2.
    Peer.inference_perf: (35.0, (40 / 3 + 30) / 2, 17.5, 80.0),
}


@pytest.mark.parametrize("peer", list(Peer))
def test_each_peer_figure_matches_the_hand_computation(peer: Peer) -> None:
    got = _means(_both(), peer)
    for value, expected in zip(got, HAND[peer], strict=True):
        if expected is None:
            assert value is None
        else:
            assert value == pytest.approx(expected, rel=1e-9)


def test_the_peers_disagree_where_their_rules_do() -> None:
    figures = _both()
    tpots = {peer: _means(figures, peer)[1] for peer in Peer}
    assert len({round(v, 6) for v in tpots.values() if v is not None}) == 4
    assert figures.answers == 2


def test_inference_perf_leaves_out_an_answer_of_one_stamped_token() -> None:
    tally = PeerTally()
    tally.add(
        ResponseTiming(send_ns=0, end_ns=30 * MS, chunk_times_ns=(10 * MS,), chunk_tokens=(1,)),
        1,
    )
    figures = tally.snapshot()
    assert figures is not None
    assert figures.inference_perf.ttft_ms is None
    assert figures.inference_perf.itl_ms is None
    assert figures.vllm.ttft_ms is not None
    assert figures.vllm.ttft_ms.mean == 10.0
    assert figures.vllm.tpot_ms is None  # one token: no TPOT under any rule


def test_tallies_merged_across_processes_equal_one_tally() -> None:
    one, other = PeerTally(), PeerTally()
    one.add(_timing_a(), 4)
    other.add(_timing_b(), 2)
    one.merge(other)
    merged = one.snapshot()
    assert merged is not None
    assert merged.answers == 2
    for peer in Peer:
        for got, alone in zip(_means(merged, peer), _means(_both(), peer), strict=True):
            assert got == alone or got == pytest.approx(alone, rel=1e-9)


def test_a_tally_with_no_streamed_answer_has_no_figures() -> None:
    assert PeerTally().snapshot() is None
    # An answer without chunk times (nothing timed token by token) is not counted.
    tally = PeerTally()
    tally.add(ResponseTiming(send_ns=0, end_ns=5), 3)
    assert tally.snapshot() is None


def _record(request_id: str, timing: ResponseTiming, tokens: int, targeted_ns: int = 0) -> Record:
    response = GenerationResponse(
        request_id=request_id,
        endpoint=Endpoint.chat,
        streamed=True,
        answer=TextAnswer(text="x" * tokens),
        finish_reason="stop",
        usage=Usage(completion_tokens=tokens, prompt_tokens=8),
        content_chunks=len(timing.chunk_times_ns),
        streamed_tokens=tokens,
        streamed_token_source=TokenSource.stream,
        terminal_seen=True,
        timing=timing,
    )
    return Record(
        request_id=request_id,
        targeted_start_ns=targeted_ns,
        dispatched_ns=timing.send_ns,
        finished_ns=timing.end_ns,
        outcome=Completed(response=response),
    )


def test_records_jsonl_gives_the_same_figures_inside_the_steps_window(tmp_path: Path) -> None:
    records = [_record("a", _timing_a(), 4), _record("b", _timing_b(), 2)]
    # A warm-up answer, outside the window: counted by neither the step nor the peers.
    warmup = _record("w", _timing_a(), 4, targeted_ns=-5)
    window = TimeWindow(start_ns=0, end_ns=10**12)
    aggregator = StepAggregator(window=window)
    for record in [*records, warmup]:
        aggregator.add(record)
    path = tmp_path / "records.jsonl"
    with RecordWriter(path) as writer:
        for record in [*records, warmup]:
            writer.write(record)
    step = StepReport.of(0, "synchronous", aggregator.snapshot())
    report = build_report(
        run_config=RunEcho(profile="synchronous"),
        started_at=NOW,
        finished_at=NOW,
        steps=[step],
        max_error_rate=0.05,
    )
    found = read_definitions(path, report)
    assert found == {0: _both()}
    with_peers = report.model_copy(
        update={"steps": (step.model_copy(update={"definitions": found[0]}),)}
    )
    text = "\n".join(definitions_text(with_peers))
    assert "vLLM bench serve" in text
    assert "inference-perf" in text
    assert "2 streamed answers" in text
    page = definitions_html(with_peers)
    assert '<section id="definitions">' in page
    assert "inference_perf/reportgen/base.py" in page
