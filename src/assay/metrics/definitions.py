"""One step's TTFT, TPOT, ITL and E2E as five other benchmarks define them, from the same answers.

Tools that measure one server disagree mostly because each computes "TPOT" or "ITL" from
different instants and divides by different counts. `PeerTally` folds each completed streamed
answer's chunk times under every rule below, so a report shows one run's figures side by side;
docs/report.md ("Definitions side by side") cites the source file of each rule.

With `send` the request's send, `first`/`last` the first and last chunk kept in the answer's
timing, `end` the end of the stream and `n` the answer's output tokens (the server's usage, else
assay's count). A chunk that carried no output (`chunk_tokens` 0: a running usage that did not
rise) is a chunk to vLLM and GuideLLM, which time every chunk with a choice, and is skipped by
SGLang, AIPerf and inference-perf, which wait for content (their `first`/`last` are the first and
last chunk with output).

- vLLM `bench serve`: TTFT = first - send; E2E = last - send; TPOT = (last - first) / (n - 1)
  for n >= 2; ITL one sample per gap between chunks, whatever each chunk carried.
- SGLang `bench_serving` (OpenAI backends): TTFT = first - send; E2E = end - send;
  TPOT = (end - first) / (n - 1); ITL one sample per gap between chunks, as vLLM.
- GuideLLM: TTFT = first - send; E2E = end - send; TPOT = (last - send) / n, the first token
  included; ITL = (last - first) / (n - 1); TPOT's distribution weighs each answer by n and ITL's
  by n - 1 (a token-weighted mean).
- AIPerf: TTFT = first - send; E2E ("request latency") = last - send;
  ITL = (last - first) / (n - 1) per answer; it defines no TPOT.
- inference-perf: every token of a chunk is stamped with the chunk's arrival; answers with
  fewer than two stamped tokens have no TTFT, TPOT or ITL. TTFT = first - send;
  TPOT = (last - first) / (n - 1); ITL one sample per token gap, 0 inside a chunk; E2E = end -
  send.
"""

from __future__ import annotations

import operator
from enum import StrEnum

from pydantic import BaseModel, ConfigDict

from assay.core.response import ResponseTiming
from assay.metrics.sketch import Distribution, QuantileSketch

_MS = 1e-6  # ns -> ms


class Peer(StrEnum):
    """The benchmarks whose definitions assay computes beside its own."""

    vllm = "vllm"
    sglang = "sglang"
    guidellm = "guidellm"
    aiperf = "aiperf"
    inference_perf = "inference_perf"


class PeerFigures(BaseModel):
    """One tool's four figures (ms) over the step's completed streamed answers; `None` where the
    tool does not define the figure or no answer had it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    ttft_ms: Distribution | None = None
    tpot_ms: Distribution | None = None
    itl_ms: Distribution | None = None
    e2e_ms: Distribution | None = None


class PeerDefinitions(BaseModel):
    """The step's latency figures under each peer's definitions (see this module's notes)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    answers: int
    vllm: PeerFigures
    sglang: PeerFigures
    guidellm: PeerFigures
    aiperf: PeerFigures
    inference_perf: PeerFigures

    def of(self, peer: Peer) -> PeerFigures:
        """The figures of `peer`."""
        match peer:
            case Peer.vllm:
                return self.vllm
            case Peer.sglang:
                return self.sglang
            case Peer.guidellm:
                return self.guidellm
            case Peer.aiperf:
                return self.aiperf
            case Peer.inference_perf:
                return self.inference_perf


class PeerTally:
    """Folds completed streamed answers under every peer's rules; mergeable across processes.

    >>> timing = ResponseTiming(send_ns=0, first_token_ns=50_000_000, end_ns=100_000_000,
    ...     chunk_times_ns=(50_000_000, 70_000_000, 90_000_000), chunk_tokens=(1, 1, 1))
    >>> tally = PeerTally()
    >>> tally.add(timing, 3)
    >>> figures = tally.snapshot()
    >>> figures.vllm.e2e_ms.mean, figures.sglang.e2e_ms.mean, figures.guidellm.tpot_ms.mean
    (90.0, 100.0, 30.0)
    """

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

    def merge(self, other: PeerTally) -> None:
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
