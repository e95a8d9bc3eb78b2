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

import copy
import operator
from collections.abc import Sequence
from enum import StrEnum

from pydantic import BaseModel, ConfigDict

from assay.core.response import ResponseTiming
from assay.metrics.sketch import FOLD_EVERY, Distribution, QuantileSketch

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

    The five peers' nineteen figures are fourteen distinct series of values, and most runs make
    them fewer: while no answer had a chunk without output, the series of the tools that wait
    for content are the series of all chunks, and while every answer with content stamped two
    tokens or more, inference-perf's TTFT and TPOT are SGLang's and AIPerf's. Each such pair
    shares one sketch until an answer tells them apart; the sketch is then copied, so each
    series sees exactly the values, in the order, it would have seen alone (a figure never
    changes by a bit for the sharing).

    >>> timing = ResponseTiming(send_ns=0, first_token_ns=50_000_000, end_ns=100_000_000,
    ...     chunk_times_ns=(50_000_000, 70_000_000, 90_000_000), chunk_tokens=(1, 1, 1))
    >>> tally = PeerTally()
    >>> tally.add(timing, 3)
    >>> figures = tally.snapshot()
    >>> figures.vllm.e2e_ms.mean, figures.sglang.e2e_ms.mean, figures.guidellm.tpot_ms.mean
    (90.0, 100.0, 30.0)
    """

    __slots__ = (
        "_answers",
        "_c_end_first_per_token",
        "_c_end_first_values",
        "_c_first_send",
        "_c_gaps",
        "_c_last_first_per_token",
        "_c_last_send",
        "_chunk_gaps",
        "_content_apart",
        "_end_send",
        "_end_send_values",
        "_first_send",
        "_first_send_values",
        "_gl_itl",
        "_gl_itl_values",
        "_gl_itl_weights",
        "_gl_tpot",
        "_gl_tpot_values",
        "_gl_tpot_weights",
        "_ip_apart",
        "_ip_first_send",
        "_ip_tpot",
        "_ip_zero_gaps",
        "_last_first_per_token",
        "_last_first_values",
        "_last_send",
        "_last_send_values",
    )

    def __init__(self) -> None:
        self._answers = 0
        self._ip_zero_gaps = 0  # inference-perf's gaps between tokens of one chunk
        # Every chunk, as vLLM and GuideLLM count them.
        self._end_send = QuantileSketch()
        self._first_send = QuantileSketch()
        self._last_send = QuantileSketch()
        self._last_first_per_token = QuantileSketch()
        self._chunk_gaps = QuantileSketch()
        self._gl_tpot = QuantileSketch()
        self._gl_itl = QuantileSketch()
        self._c_end_first_per_token = QuantileSketch()
        # Every answer adds one value to each of these: kept in plain lists and handed to their
        # sketches a thousand at a time (`_flush`), as adding them one at a time would.
        self._end_send_values: list[int] = []
        self._first_send_values: list[int] = []
        self._last_send_values: list[int] = []
        self._last_first_values: list[float] = []
        self._c_end_first_values: list[float] = []
        # GuideLLM's two weighted series, kept the same way (value and weight).
        self._gl_tpot_values: list[float] = []
        self._gl_tpot_weights: list[int] = []
        self._gl_itl_values: list[float] = []
        self._gl_itl_weights: list[int] = []
        # The chunks with output (SGLang, AIPerf, inference-perf): the same sketches as every
        # chunk's until `_content_apart`, then their own.
        self._content_apart = False
        self._c_first_send = self._first_send
        self._c_last_send = self._last_send
        self._c_last_first_per_token = self._last_first_per_token
        self._c_gaps = self._chunk_gaps
        # Answers of two stamped tokens or more (inference-perf): the content sketches until
        # `_ip_apart`.
        self._ip_apart = False
        self._ip_first_send = self._c_first_send
        self._ip_tpot = self._c_last_first_per_token

    def add(self, timing: ResponseTiming, output_tokens: int) -> None:
        """Count one completed streamed answer of `output_tokens` tokens."""
        self.add_answer(
            timing.send_ns, timing.end_ns, timing.chunk_times_ns, timing.chunk_tokens, output_tokens
        )

    def add_answer(
        self,
        send: int,
        end: int,
        times: Sequence[int],
        counts: Sequence[int],
        n: int,
    ) -> None:
        """Count one completed streamed answer from its timing's plain values: sent at `send`,
        ended at `end`, its chunks read at `times` carrying `counts` tokens, `n` output tokens."""
        if not times:
            return
        if len(counts) == len(times) and 0 not in counts:  # every chunk carried output
            content: Sequence[int] = times
            stamped = sum(counts)
        else:
            content, stamped = _content(times, counts)
            if not self._content_apart:
                self._part_content()
        if content and stamped < 2 and not self._ip_apart:
            self._part_ip()
        self._answers += 1
        first, last = times[0], times[-1]
        ends = self._end_send_values
        ends.append(end - send)
        self._first_send_values.append(first - send)
        self._last_send_values.append(last - send)
        per_token = 0.0
        if n >= 1:
            self._gl_tpot_values.append((last - send) / n)
            self._gl_tpot_weights.append(n)
        if n >= 2:
            per_token = (last - first) / (n - 1)
            self._last_first_values.append(per_token)
            self._gl_itl_values.append(per_token)
            self._gl_itl_weights.append(n - 1)
        gaps = _gaps(times)
        if gaps:
            self._chunk_gaps.add_all(gaps)
        if content is not times and content:
            first, last = content[0], content[-1]
            per_token = (last - first) / (n - 1) if n >= 2 else 0.0
            gaps = _gaps(content)
        if content:
            if n >= 2:
                self._c_end_first_values.append((end - first) / (n - 1))
            if self._content_apart or self._ip_apart:
                self._add_apart(send, first, last, per_token, gaps, n, stamped)
            if stamped >= 2:
                self._ip_zero_gaps += stamped - len(content)
        if len(ends) >= FOLD_EVERY:
            self._flush()

    def _add_apart(
        self,
        send: int,
        first: int,
        last: int,
        per_token: float,
        gaps: list[int],
        n: int,
        stamped: int,
    ) -> None:
        """Add an answer's content figures to the sketches no longer shared (see `add_answer`)."""
        if self._content_apart:
            self._c_first_send.add(first - send)
            self._c_last_send.add(last - send)
            if n >= 2:
                self._c_last_first_per_token.add(per_token)
            if gaps:
                self._c_gaps.add_all(gaps)
        if self._ip_apart and stamped >= 2:
            self._ip_first_send.add(first - send)
            if n >= 2:
                self._ip_tpot.add(per_token)

    def _flush(self) -> None:
        """Hand the kept values to their sketches, before anything reads or copies them."""
        for values, sketch in (
            (self._end_send_values, self._end_send),
            (self._first_send_values, self._first_send),
            (self._last_send_values, self._last_send),
            (self._last_first_values, self._last_first_per_token),
            (self._c_end_first_values, self._c_end_first_per_token),
        ):
            if values:
                sketch.add_each(values)
                values.clear()
        for values, weights, sketch in (
            (self._gl_tpot_values, self._gl_tpot_weights, self._gl_tpot),
            (self._gl_itl_values, self._gl_itl_weights, self._gl_itl),
        ):
            if values:
                sketch.add_weighted(values, weights)
                values.clear()
                weights.clear()

    def _part_content(self) -> None:
        """Give the content series sketches of their own, copies of what they shared so far."""
        self._flush()
        self._content_apart = True
        self._c_first_send = copy.deepcopy(self._first_send)
        self._c_last_send = copy.deepcopy(self._last_send)
        self._c_last_first_per_token = copy.deepcopy(self._last_first_per_token)
        self._c_gaps = copy.deepcopy(self._chunk_gaps)
        if not self._ip_apart:
            self._ip_first_send = self._c_first_send
            self._ip_tpot = self._c_last_first_per_token

    def _part_ip(self) -> None:
        """Give inference-perf's TTFT and TPOT sketches of their own, copies of the content's."""
        self._flush()
        self._ip_apart = True
        self._ip_first_send = copy.deepcopy(self._c_first_send)
        self._ip_tpot = copy.deepcopy(self._c_last_first_per_token)

    def merge(self, other: PeerTally) -> None:
        """Fold `other` (the same step tallied elsewhere) into this tally."""
        self._flush()
        other._flush()
        if other._content_apart and not self._content_apart:
            self._part_content()
        if other._ip_apart and not self._ip_apart:
            self._part_ip()
        self._answers += other._answers
        self._ip_zero_gaps += other._ip_zero_gaps
        pairs = [
            (self._end_send, other._end_send),
            (self._first_send, other._first_send),
            (self._last_send, other._last_send),
            (self._last_first_per_token, other._last_first_per_token),
            (self._chunk_gaps, other._chunk_gaps),
            (self._gl_tpot, other._gl_tpot),
            (self._gl_itl, other._gl_itl),
            (self._c_end_first_per_token, other._c_end_first_per_token),
        ]
        if self._content_apart:
            pairs += [
                (self._c_first_send, other._c_first_send),
                (self._c_last_send, other._c_last_send),
                (self._c_last_first_per_token, other._c_last_first_per_token),
                (self._c_gaps, other._c_gaps),
            ]
        if self._ip_apart:
            pairs += [(self._ip_first_send, other._ip_first_send), (self._ip_tpot, other._ip_tpot)]
        for mine, theirs in pairs:
            mine.merge(theirs)

    def snapshot(self) -> PeerDefinitions | None:
        """The frozen figures, or None when no streamed answer was counted."""
        if self._answers == 0:
            return None
        self._flush()
        # inference-perf's ITL: the content chunks' gaps with a 0 for every token that shared a
        # chunk with the token before it.
        token_gaps = QuantileSketch()
        if self._ip_first_send.count:
            token_gaps.merge(self._c_gaps)
            token_gaps.add(0.0, self._ip_zero_gaps)
        return PeerDefinitions(
            answers=self._answers,
            vllm=PeerFigures(
                ttft_ms=_ms(self._first_send),
                tpot_ms=_ms(self._last_first_per_token),
                itl_ms=_ms(self._chunk_gaps),
                e2e_ms=_ms(self._last_send),
            ),
            sglang=PeerFigures(
                ttft_ms=_ms(self._c_first_send),
                tpot_ms=_ms(self._c_end_first_per_token),
                itl_ms=_ms(self._c_gaps),
                e2e_ms=_ms(self._end_send),
            ),
            guidellm=PeerFigures(
                ttft_ms=_ms(self._first_send),
                tpot_ms=_ms(self._gl_tpot),
                itl_ms=_ms(self._gl_itl),
                e2e_ms=_ms(self._end_send),
            ),
            aiperf=PeerFigures(
                ttft_ms=_ms(self._c_first_send),
                tpot_ms=None,
                itl_ms=_ms(self._c_last_first_per_token),
                e2e_ms=_ms(self._c_last_send),
            ),
            inference_perf=PeerFigures(
                ttft_ms=_ms(self._ip_first_send),
                tpot_ms=_ms(self._ip_tpot),
                itl_ms=_ms(token_gaps),
                e2e_ms=_ms(self._end_send),
            ),
        )


def _gaps(times: Sequence[int]) -> list[int]:
    """The gaps between consecutive chunk times of a non-empty answer (none for one chunk);
    zeros, without subtracting, when every chunk was read at once.

    >>> _gaps([5, 7, 7]), _gaps([7, 7, 7]), _gaps([7])
    ([2, 0], [0, 0], [])
    """
    first = times[0]
    if first == times[-1] and times.count(first) == len(times):
        return [0] * (len(times) - 1)
    return list(map(operator.sub, times[1:], times))


def _content(times: Sequence[int], counts: Sequence[int]) -> tuple[list[int], int]:
    """The times of the chunks with output and how many tokens they stamped, for an answer
    where some chunk carried none or had no count (`add_answer` reads the common case itself).
    Chunks without output (a running usage that did not rise) are chunks to vLLM and GuideLLM,
    not to the tools that wait for content; a chunk without a count counts one token."""
    have = len(counts)
    kept = [i for i in range(len(times)) if i >= have or counts[i] > 0]
    return [times[i] for i in kept], sum([counts[i] if i < have else 1 for i in kept])


def _ms(sketch: QuantileSketch) -> Distribution | None:
    return sketch.summary(_MS)
