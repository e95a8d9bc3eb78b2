"""The one pass over records.jsonl after a run finds exactly what the two readers it replaced
found: the peers' figures of every step (to the last bit of every mean and spread) and the
page's latency samples (the same values, the same reservoir picks), whatever mix of answers
the file holds. `readback_reference` is a frozen copy of the readers as they were."""

from __future__ import annotations

import random
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson
import pytest

from assay.core.response import ResponseTiming
from assay.metrics import StepAggregator
from assay.metrics.definitions import PeerTally
from assay.reports import latency_samples
from assay.reports.readback import read_back, read_latency_samples
from assay.reports.report import Report, StepReport, build_report
from assay.spec.run import RunEcho
from tests.reports import readback_reference as reference

NOW = datetime(2026, 1, 1, tzinfo=UTC)
MS = 1_000_000


def _answer(rng: random.Random, shape: str) -> tuple[list[int], list[int], int]:
    """Chunk times (ns after a send at 0), their token counts and the output count of one
    answer of `shape`."""
    chunks = rng.randint(1, 24)
    at = rng.randint(5 * MS, 80 * MS)
    times, counts = [], []
    for _ in range(chunks):
        times.append(at)
        counts.append(rng.choice((1, 1, 1, 2, 3)))
        # Gaps of every kind: reads of several chunks at once (0), jitter, long stalls.
        at += rng.choice((0, rng.randint(1, 9_999), rng.randint(MS, 40 * MS)))
    if shape == "zero chunk" and chunks > 1:
        counts[rng.randrange(chunks)] = 0  # a running usage that did not rise
    if shape == "all zero":
        counts = [0] * chunks
    if shape == "short counts":
        counts = counts[: rng.randrange(chunks)]
    if shape == "one token":
        times, counts = times[:1], [1]
    tokens = sum(counts) if shape != "usage differs" else sum(counts) + rng.randint(-1, 3)
    return times, counts, tokens


def _line(rng: random.Random, index: int, step: int, shape: str) -> dict[str, Any]:
    times, counts, tokens = _answer(rng, shape)
    end = times[-1] + rng.choice((0, rng.randint(1, 5 * MS)))
    line: dict[str, Any] = {
        "id": f"req-{index}",
        "step": step,
        "status": "completed",
        "targeted_start_ns": rng.randint(-10 * MS, 1_000 * MS),
        "timing": {
            "send_ns": 0,
            "first_token_ns": times[0],
            "end_ns": end,
            "chunk_times_ns": times,
            "chunk_tokens": counts,
        },
        "usage": {"completion_tokens": tokens},
        "response": {"streamed": True, "embeddings": None, "scores": None, "streamed_tokens": 7},
    }
    match shape:
        case "errored":
            line["status"] = "errored"
        case "not streamed":
            line["response"]["streamed"] = False
        case "embeddings":
            line["response"]["embeddings"] = {"count": 1}
        case "no usage":
            line["usage"] = None
        case "float chunk":
            line["timing"]["chunk_times_ns"] = [*times[:-1], times[-1] + 0.5]
        case "no first token":
            del line["timing"]["first_token_ns"]
        case _:
            pass  # the other shapes are in the chunks
    return line


PLAIN = ("plain",)
EVERY_SHAPE = (
    "plain",
    "zero chunk",
    "all zero",
    "short counts",
    "one token",
    "usage differs",
    "errored",
    "not streamed",
    "embeddings",
    "no usage",
    "float chunk",
    "no first token",
)


def _records(tmp_path: Path, shapes: tuple[str, ...], count: int, seed: int) -> Path:
    rng = random.Random(seed)
    path = tmp_path / "records.jsonl"
    with path.open("wb") as out:
        for index in range(count):
            shape = shapes[0] if index < count // 3 else rng.choice(shapes)
            out.write(orjson.dumps(_line(rng, index, rng.choice((0, 0, 1, 2)), shape)) + b"\n")
    return path


def _report() -> Report:
    """Three steps: the first two with a measured window (warm-up left out), the last without."""
    steps = []
    for index, window in ((0, (0, 600 * MS)), (1, (100 * MS, 10**12)), (2, None)):
        metrics = StepAggregator().snapshot()
        if window is not None:
            # Records left out of a measured window: the window is in force.
            update = {"excluded": 1, "start_ns": window[0], "end_ns": window[1]}
            metrics = metrics.model_copy(update=update)
        steps.append(StepReport.of(index, "synchronous", metrics))
    return build_report(
        run_config=RunEcho(profile="synchronous"),
        started_at=NOW,
        finished_at=NOW,
        steps=steps,
        max_error_rate=0.05,
    )


@pytest.mark.parametrize(
    ("shapes", "seed"),
    [
        (PLAIN, 1),  # every pair of series shares its sketch to the end
        (("plain", "zero chunk"), 2),  # the content series part from every chunk's
        (("plain", "one token"), 3),  # inference-perf's part from the content's
        (EVERY_SHAPE, 4),
        (EVERY_SHAPE, 5),
    ],
)
def test_one_pass_finds_what_the_two_readers_found(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, shapes: tuple[str, ...], seed: int
) -> None:
    # A small reservoir, so the picks past a full one are compared too.
    monkeypatch.setattr(latency_samples, "MAX_SAMPLES_PER_STEP", 97)
    monkeypatch.setattr(reference, "MAX_SAMPLES", 97)
    records = _records(tmp_path, shapes, 3_000, seed)
    report = _report()
    assert report.steps[0].metrics.excluded  # the windows are in force
    found = read_back(records, report, seed=seed)
    before = reference.old_read_definitions(records, report)
    assert set(found.definitions) == set(before) == {0, 1, 2}
    for step, peers in before.items():
        assert found.definitions[step].model_dump() == peers.model_dump()
    assert found.samples == reference.old_read_latency_samples(records, seed)
    assert read_latency_samples(records, seed) == found.samples


def test_merged_tallies_give_what_one_tally_of_every_answer_gives(tmp_path: Path) -> None:
    """Merging a tally whose series parted into one whose did not (and back) parts the other."""
    rng = random.Random(7)
    answers = [_answer(rng, "plain") for _ in range(400)]
    answers += [_answer(rng, rng.choice(("zero chunk", "one token"))) for _ in range(50)]
    old_whole = reference.OldPeerTally()
    for times, counts, tokens in answers:
        old_whole.add(_timing(times, counts), tokens)
    for split in (100, 420):
        first, second = PeerTally(), PeerTally()
        for times, counts, tokens in answers[:split]:
            first.add_answer(0, times[-1], times, counts, tokens)
        for times, counts, tokens in answers[split:]:
            second.add_answer(0, times[-1], times, counts, tokens)
        old_first, old_second = reference.OldPeerTally(), reference.OldPeerTally()
        for times, counts, tokens in answers[:split]:
            old_first.add(_timing(times, counts), tokens)
        for times, counts, tokens in answers[split:]:
            old_second.add(_timing(times, counts), tokens)
        second.merge(first)
        old_second.merge(old_first)
        now, before = second.snapshot(), old_second.snapshot()
        assert now is not None
        assert before is not None
        assert now.model_dump() == before.model_dump()


def _timing(times: list[int], counts: list[int]) -> ResponseTiming:
    return ResponseTiming.model_construct(
        send_ns=0, end_ns=times[-1], chunk_times_ns=tuple(times), chunk_tokens=tuple(counts)
    )
