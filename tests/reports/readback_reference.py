"""assay's readers of records.jsonl after a run as they were before the one pass (a frozen
copy), for `test_readback_same_figures`: the figures read back must not change by a bit."""

from __future__ import annotations

import operator
import random
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import orjson

from assay.core.response import ResponseTiming
from assay.handlers.wire import int_field
from assay.metrics.definitions import PeerDefinitions, PeerFigures
from assay.metrics.sketch import Distribution, QuantileSketch
from assay.reports.report import Report, StepReport

_MS = 1e-6
CDF_METRICS = ("ttft_ms", "tpot_ms", "e2e_ms")
MAX_SAMPLES = 20_000


def _lines(path: Path) -> Iterator[dict[str, Any]]:
    for raw in path.read_bytes().splitlines():
        if raw.strip():
            yield orjson.loads(raw)


class OldPeerTally:
    """Folds completed streamed answers under every peer's rules; mergeable across processes."""

    __slots__ = ("_answers", "_ip_zero_gaps", "_sketches")

    def __init__(self) -> None:
        self._answers = 0
        self._ip_zero_gaps = 0  # inference-perf's gaps between tokens of one chunk
        self._sketches = {name: QuantileSketch() for name in _SKETCHES}

    def add(self, timing: ResponseTiming, output_tokens: int) -> None:
        """Count one completed streamed answer of `output_tokens` tokens."""
        times = timing.chunk_times_ns
        if not times:
            return
        counts = timing.chunk_tokens
        if len(counts) == len(times) and 0 not in counts:
            content, stamped = times, sum(counts)
        else:
            # Chunks without output (a running usage that did not rise) are chunks to vLLM and
            # GuideLLM, not to the tools that wait for content.
            have = len(counts)
            kept = [i for i in range(len(times)) if i >= have or counts[i] > 0]
            content = tuple(times[i] for i in kept)
            stamped = sum(counts[i] if i < have else 1 for i in kept)
        self._answers += 1
        s = self._sketches
        send, end, n = timing.send_ns, timing.end_ns, output_tokens
        first, last = times[0], times[-1]
        s["end_send"].add(end - send)
        s["first_send"].add(first - send)
        s["last_send"].add(last - send)
        if n >= 1:
            s["gl_tpot"].add((last - send) / n, n)
        if n >= 2:
            s["last_first_per_token"].add((last - first) / (n - 1))
            s["gl_itl"].add((last - first) / (n - 1), n - 1)
        if len(times) > 1:
            s["chunk_gaps"].add_all(list(map(operator.sub, times[1:], times)))
        if not content:
            return
        first, last = content[0], content[-1]
        s["c_first_send"].add(first - send)
        s["c_last_send"].add(last - send)
        if n >= 2:
            s["c_end_first_per_token"].add((end - first) / (n - 1))
            s["c_last_first_per_token"].add((last - first) / (n - 1))
        if len(content) > 1:
            s["c_gaps"].add_all(list(map(operator.sub, content[1:], content)))
        if stamped >= 2:
            s["ip_first_send"].add(first - send)
            self._ip_zero_gaps += stamped - len(content)
            if n >= 2:
                s["ip_tpot"].add((last - first) / (n - 1))

    def merge(self, other: OldPeerTally) -> None:
        """Fold `other` (the same step tallied elsewhere) into this tally."""
        self._answers += other._answers
        self._ip_zero_gaps += other._ip_zero_gaps
        for name, sketch in self._sketches.items():
            sketch.merge(other._sketches[name])

    def snapshot(self) -> PeerDefinitions | None:
        """The frozen figures, or None when no streamed answer was counted."""
        if self._answers == 0:
            return None
        s = self._sketches

        def ms(name: str) -> Distribution | None:
            return s[name].summary(_MS)

        # inference-perf's ITL: the content chunks' gaps with a 0 for every token that shared a
        # chunk with the token before it.
        token_gaps = QuantileSketch()
        if s["ip_first_send"].count:
            token_gaps.merge(s["c_gaps"])
            token_gaps.add(0.0, self._ip_zero_gaps)
        return PeerDefinitions(
            answers=self._answers,
            vllm=PeerFigures(
                ttft_ms=ms("first_send"),
                tpot_ms=ms("last_first_per_token"),
                itl_ms=ms("chunk_gaps"),
                e2e_ms=ms("last_send"),
            ),
            sglang=PeerFigures(
                ttft_ms=ms("c_first_send"),
                tpot_ms=ms("c_end_first_per_token"),
                itl_ms=ms("c_gaps"),
                e2e_ms=ms("end_send"),
            ),
            guidellm=PeerFigures(
                ttft_ms=ms("first_send"),
                tpot_ms=ms("gl_tpot"),
                itl_ms=ms("gl_itl"),
                e2e_ms=ms("end_send"),
            ),
            aiperf=PeerFigures(
                ttft_ms=ms("c_first_send"),
                tpot_ms=None,
                itl_ms=ms("c_last_first_per_token"),
                e2e_ms=ms("c_last_send"),
            ),
            inference_perf=PeerFigures(
                ttft_ms=ms("ip_first_send"),
                tpot_ms=ms("ip_tpot"),
                itl_ms=token_gaps.summary(_MS),
                e2e_ms=ms("end_send"),
            ),
        )


# The sketches a tally keeps; `c_` ones count only chunks that carried output.
_SKETCHES = (
    "end_send",
    "first_send",
    "last_send",
    "last_first_per_token",
    "chunk_gaps",
    "gl_tpot",
    "gl_itl",
    "c_first_send",
    "c_last_send",
    "c_end_first_per_token",
    "c_last_first_per_token",
    "c_gaps",
    "ip_first_send",
    "ip_tpot",
)


def old_read_definitions(records: Path, report: Report) -> dict[int, PeerDefinitions]:
    """Per step index, the peers' figures of the step's completed streamed answers in `records`.

    A record whose targeted start falls outside its step's measured window (warm-up, cool-down)
    is left out, as the step's own figures leave it out. Raises `DataError` naming the line when
    a line is not a JSON object.
    """
    windows = {step.index: _window(step) for step in report.steps}
    tallies: dict[int, OldPeerTally] = {}
    for line in _lines(records):
        found = _streamed_answer(line)
        if found is None:
            continue
        step, targeted, timing, output_tokens = found
        if step not in windows:
            continue
        window = windows[step]
        if window is not None and not (window[0] <= targeted < window[1]):
            continue
        tallies.setdefault(step, OldPeerTally()).add(timing, output_tokens)
    snapshots = {step: tally.snapshot() for step, tally in tallies.items()}
    return {step: peers for step, peers in snapshots.items() if peers is not None}


def _window(step: StepReport) -> tuple[int, int] | None:
    metrics = step.metrics
    if metrics.excluded and metrics.start_ns is not None and metrics.end_ns is not None:
        return metrics.start_ns, metrics.end_ns
    return None


def _streamed_answer(
    line: Mapping[str, object],
) -> tuple[int, int, ResponseTiming, int] | None:
    """(step, targeted start, timing, output tokens) of a completed streamed text answer."""
    if line.get("status") != "completed":
        return None
    step, targeted = line.get("step", 0), line.get("targeted_start_ns")
    timing, response = line.get("timing"), line.get("response")
    if not (isinstance(step, int) and isinstance(targeted, int)):
        return None
    if not (isinstance(timing, dict) and isinstance(response, dict)):
        return None
    if response.get("streamed") is not True or response.get("embeddings") is not None:
        return None
    if response.get("scores") is not None:
        return None
    built = _timing(timing)
    tokens = _output_tokens(line.get("usage"), response)
    if built is None or tokens is None:
        return None
    return step, targeted, built, tokens


def _timing(timing: Mapping[str, object]) -> ResponseTiming | None:
    send, end = timing.get("send_ns"), timing.get("end_ns")
    times, counts = timing.get("chunk_times_ns"), timing.get("chunk_tokens")
    if not (isinstance(send, int) and isinstance(end, int)):
        return None
    if not (isinstance(times, list) and isinstance(counts, list)):
        return None
    if not all(isinstance(t, int) for t in times) or not all(isinstance(c, int) for c in counts):
        return None
    return ResponseTiming.model_construct(
        send_ns=send, end_ns=end, chunk_times_ns=tuple(times), chunk_tokens=tuple(counts)
    )


def _output_tokens(usage: object, response: Mapping[str, object]) -> int | None:
    """The server's output count, else assay's streamed count (as every figure counts)."""
    reported = usage.get("completion_tokens") if isinstance(usage, dict) else None
    if isinstance(reported, int) and not isinstance(reported, bool):
        return reported
    streamed = response.get("streamed_tokens")
    if isinstance(streamed, int) and not isinstance(streamed, bool):
        return streamed
    return None


def old_read_latency_samples(records: Path, seed: int = 0) -> dict[str, dict[int, list[float]]]:
    """Per metric and step, per-request latencies (ms) of completed requests in `records`.

    TTFT is first token - send, E2E is end - send, TPOT is (E2E - TTFT) / (output tokens - 1)
    for answers of two or more tokens. Each list is a uniform sample of at most
    `MAX_SAMPLES` values (reservoir sampling, seeded), so memory stays bounded.
    Raises `DataError` naming the line when a line is not a JSON object.
    """
    rng = random.Random(seed)
    samples: dict[str, dict[int, list[float]]] = {metric: {} for metric in CDF_METRICS}
    seen: dict[tuple[str, int], int] = {}

    def keep(metric: str, step: int, value: float) -> None:
        bucket = samples[metric].setdefault(step, [])
        count = seen.get((metric, step), 0) + 1
        seen[(metric, step)] = count
        if len(bucket) < MAX_SAMPLES:
            bucket.append(value)
            return
        slot = rng.randrange(count)
        if slot < MAX_SAMPLES:
            bucket[slot] = value

    for line in _lines(records):
        if line.get("status") != "completed":
            continue
        step = line.get("step", 0)
        timing = line.get("timing")
        if not isinstance(step, int) or not isinstance(timing, dict):
            continue
        send, first, end = (
            timing.get("send_ns"),
            timing.get("first_token_ns"),
            timing.get("end_ns"),
        )
        if not isinstance(send, int) or not isinstance(end, int):
            continue
        e2e = (end - send) / 1e6
        keep("e2e_ms", step, e2e)
        if isinstance(first, int):
            ttft = (first - send) / 1e6
            keep("ttft_ms", step, ttft)
            tokens = _sample_tokens(line)
            if tokens is not None and tokens > 1:
                keep("tpot_ms", step, (e2e - ttft) / (tokens - 1))
    return samples


def _sample_tokens(line: Mapping[str, object]) -> int | None:
    usage, response = line.get("usage"), line.get("response")
    reported = int_field(usage, "completion_tokens") if isinstance(usage, dict) else None
    if reported is not None:
        return reported
    return int_field(response, "streamed_tokens") if isinstance(response, dict) else None
