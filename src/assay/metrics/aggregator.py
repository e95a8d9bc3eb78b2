"""Streaming aggregation of one profile step's records into `StepMetrics`, in bounded memory.

Definitions (all times are monotonic ns of the run's clock, reported in ms):

- TTFT = first token - send.
- ITL: one sample per token gap. A network read that brings `k` tokens `g` ns after the previous
  read gives `k` samples of `g / k` (its tokens are taken to have arrived evenly over the gap),
  whether the server put them in one chunk or the transport delivered several chunks in one read
  (they then share one arrival time). The tokens of the first read follow the send, not a token,
  so they belong to TTFT and give no ITL sample: 16 one-token chunks read one by one give 15
  samples. Tokens that shared a read with the token before them are counted in
  `itl_coalesced_gaps`; spreading the read's gap keeps them from adding zero gaps that would
  pull the ITL percentiles to 0 under load.
- TPOT = (E2E - TTFT) / (output tokens - 1), for responses with >= 2 output tokens.
- A non-streamed answer arrives whole: its first token is not observed, so it has no TTFT, ITL
  or TPOT (counted in `not_streamed`); an embeddings answer has no output tokens either
  (counted in `Tokens.embeddings`, left out of the output figures), nor has a rerank or score
  answer (counted in `Tokens.scored`; its documents make `Throughput.usable_documents_per_s`).
- E2E latency = end - send.
- Latency from targeted start = end - targeted start: it includes the time the client was late,
  so a client that falls behind its schedule cannot hide it (coordinated omission).
- Dispatch lag = dispatched - targeted start, over *every* dispatched request: it measures the
  client, whatever the server later did.
- Output and prompt tokens per request. The output count is the server's usage when reported,
  else assay's streamed count; `Tokens.output_sources` says how many came from each.

The server latencies above (TTFT, ITL, TPOT, E2E, from target) and the token distributions come
from **completed requests only**: an errored response is not a served one. Errored requests
count in the outcomes, the errors by code and the *attempted* throughput (with the output tokens
of their partial response, when there is one; assay's own streamed count when the validators
rejected the server's usage as impossible or the answer as empty, so a figure the server could
not have produced never reaches a throughput).

Throughput is over the step's duration: the window when one is given, else first dispatch to last
finish of the counted records. Usable = completed only; attempted = everything dispatched.
Mean concurrency = sum of in-flight (dispatch to finish) durations / duration; the peak is
bracketed in bounded memory (see `assay.metrics.concurrency`).

With a window, only records whose targeted start falls in [start_ns, end_ns) are counted; the
others are counted as `excluded` and nothing else.

The figures peers print beside these (input and total tokens/s, peak output tokens/s in
one-second buckets, TTST, decode time, per-user output tokens/s) come from the completed requests
counted above; docs/report.md defines each ("Figures beside other benchmarks"). The peak's
buckets start at the window's start, else `origin_ns`, else 0, and a request whose output count
differs from its per-chunk counts has its tokens spread over its chunks in proportion, so the
buckets add up to the usable output tokens; memory is one integer per second that saw a token.
"""

from __future__ import annotations

import itertools
import operator
from dataclasses import dataclass
from typing import assert_never

from pydantic import BaseModel, ConfigDict, model_validator

from assay.core.answer import Scores, TextAnswer, Vectors
from assay.core.diagnostics import AnyCode, DiagnosticCode
from assay.core.response import GenerationResponse, TokenSource
from assay.errors import ConfigError
from assay.metrics.arrivals import add_arrivals, add_spread_gaps, second_token_ns
from assay.metrics.concurrency import ConcurrencyTracker
from assay.metrics.inputs import InputTally
from assay.metrics.sketch import FOLD_EVERY, QuantileSketch
from assay.metrics.slo import Slo
from assay.metrics.step_metrics import (
    Concurrency,
    ErrorSummary,
    Goodput,
    Latency,
    Outcomes,
    StepMetrics,
    Throughput,
    Tokens,
)
from assay.records.record import Cancelled, Completed, Errored, RequestRecord

_MS = 1e-6  # ns -> ms

# Errors whose partial's usage is not evidence of output: counted by what was streamed instead.
_USAGE_NOT_BELIEVED = frozenset({DiagnosticCode.impossible_usage, DiagnosticCode.empty_response})
# Errors whose usage the stream contradicted: the server's own counters are compared with the
# streamed count. Every other answer counts as the server reported it (an empty answer's usage
# included: the server generated those tokens, it only showed none).
_USAGE_CONTRADICTED = frozenset({DiagnosticCode.impossible_usage, DiagnosticCode.usage_mismatch})
# Read once: an enum member read through its class is a descriptor call (about 70 ns a record).
_FROM_USAGE = TokenSource.usage


@dataclass(slots=True)
class _ErrorTally:
    count: int
    example: str  # the first message seen for the code


class TimeWindow(BaseModel):
    """The span of targeted start times a step counts: [start_ns, end_ns).

    >>> TimeWindow(start_ns=0, end_ns=10).duration_ns
    10
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    start_ns: int
    end_ns: int

    @model_validator(mode="after")
    def _not_empty(self) -> TimeWindow:
        if self.end_ns <= self.start_ns:
            raise ValueError(f"window ends ({self.end_ns}) before it starts ({self.start_ns})")
        return self

    @property
    def duration_ns(self) -> int:
        return self.end_ns - self.start_ns


class StepAggregator:
    """Folds the records of one step into sketches and counters; `snapshot()` freezes them.

    Aggregators built in several processes with the same SLO and window `merge` exactly.

    Its errors by code are the report's figure, one of four counts of the same codes that differ
    on purpose: only errored records whose targeted start falls in the measured window (warm-up
    and cool-down are `excluded`), merged over every process, the records a lost process's shard
    kept included. The live counts (`StepTally`, and `StepResult.errors_by_code` from
    `merge_step`) count every record of the step as it runs, and the timeline every record per
    interval.

    >>> from assay.core import Endpoint, GenerationResponse, ResponseTiming
    >>> from assay.records import Completed, RequestRecord
    >>> timing = ResponseTiming(send_ns=0, first_token_ns=50_000_000, end_ns=90_000_000,
    ...                         chunk_times_ns=(50_000_000, 70_000_000, 90_000_000),
    ...                         chunk_tokens=(1, 1, 1))
    >>> response = GenerationResponse(request_id="r1", endpoint=Endpoint.chat, streamed=True,
    ...                               streamed_tokens=3, timing=timing)
    >>> aggregator = StepAggregator()
    >>> aggregator.add(RequestRecord[GenerationResponse](
    ...     request_id="r1", targeted_start_ns=0, dispatched_ns=0, finished_ns=90_000_000,
    ...     outcome=Completed(response=response)))
    >>> metrics = aggregator.snapshot()
    >>> metrics.latency.ttft_ms.mean, metrics.latency.tpot_ms.mean, metrics.outcomes.completed
    (50.0, 20.0, 1)
    """

    __slots__ = (
        "_attempted_output_tokens",
        "_cancelled",
        "_completed",
        "_concurrency",
        "_decode",
        "_dispatch_lag",
        "_e2e",
        "_e2e_from_target",
        "_embeddings",
        "_errored",
        "_errors",
        "_excluded",
        "_first_dispatch_ns",
        "_good",
        "_inputs",
        "_itl",
        "_itl_coalesced",
        "_last_finish_ns",
        "_not_streamed",
        "_output_by_second",
        "_output_sources",
        "_output_tokens",
        "_per_user",
        "_prompt_tokens",
        "_reported_output_tokens",
        "_scored",
        "_tpot",
        "_ttft",
        "_ttst",
        "_usable_documents",
        "_usable_output_tokens",
        "_usable_prompt_tokens",
        "origin_ns",
        "slo",
        "window",
    )

    def __init__(
        self,
        slo: Slo | None = None,
        window: TimeWindow | None = None,
        origin_ns: int | None = None,
    ) -> None:
        self.slo = slo
        self.window = window
        # Where the one-second buckets of the peak output rate start: the window's start when
        # there is one, else the step's start (shared by its processes), else the clock's zero.
        self.origin_ns = origin_ns
        self._completed = 0
        self._errored = 0
        self._cancelled = 0
        self._excluded = 0
        self._good = 0
        self._errors: dict[AnyCode, _ErrorTally] = {}
        self._ttft = QuantileSketch()
        self._itl = QuantileSketch()
        self._tpot = QuantileSketch()
        self._e2e = QuantileSketch()
        self._e2e_from_target = QuantileSketch()
        self._dispatch_lag = QuantileSketch()
        self._output_tokens = QuantileSketch()
        self._prompt_tokens = QuantileSketch()
        self._output_sources: dict[TokenSource, int] = {}
        self._not_streamed = 0
        self._itl_coalesced = 0
        self._embeddings = 0
        self._scored = 0
        self._usable_documents = 0
        self._usable_output_tokens = 0
        self._attempted_output_tokens = 0
        self._reported_output_tokens = 0
        self._concurrency = ConcurrencyTracker()
        self._inputs = InputTally()
        self._first_dispatch_ns: int | None = None
        self._last_finish_ns: int | None = None
        self._ttst = QuantileSketch()
        self._decode = QuantileSketch()
        self._per_user = QuantileSketch()
        self._usable_prompt_tokens = 0
        self._output_by_second: dict[int, int] = {}

    @property
    def bucket_origin_ns(self) -> int:
        """Where the peak output rate's one-second buckets start (see the module's notes)."""
        if self.window is not None:
            return self.window.start_ns
        return 0 if self.origin_ns is None else self.origin_ns

    def add(self, record: RequestRecord[GenerationResponse]) -> None:
        """Count one finished record (any outcome)."""
        window = self.window
        if window is not None and not (window.start_ns <= record.targeted_start_ns < window.end_ns):
            self._excluded += 1
            return
        dispatched = record.dispatched_ns
        finished = record.finished_ns
        if self._first_dispatch_ns is None or dispatched < self._first_dispatch_ns:
            self._first_dispatch_ns = dispatched
        if self._last_finish_ns is None or finished > self._last_finish_ns:
            self._last_finish_ns = finished
        self._concurrency.add(dispatched, finished)
        # Kept as `add` keeps them; all folded when the lag's are due (one value every record).
        lag = self._dispatch_lag._pending
        lag.append(dispatched - record.targeted_start_ns)
        if len(lag) >= FOLD_EVERY:
            self._fold_sketches()
        outcome = record.outcome
        # Most records are completed: told by their type first, as a pydantic model's instance
        # check (what a class pattern makes, per arm) is a Python call.
        if type(outcome) is Completed or isinstance(outcome, Completed):
            self._completed += 1
            self._add_completed(outcome.response, record.targeted_start_ns)
            return
        match outcome:
            case Errored(diagnostic=diagnostic):
                self._errored += 1
                tally = self._errors.get(diagnostic.code)
                if tally is None:
                    self._errors[diagnostic.code] = _ErrorTally(1, diagnostic.message)
                else:
                    tally.count += 1
                partial = diagnostic.evidence.partial
                if partial is not None:
                    self._attempted_output_tokens += (
                        partial.streamed_tokens
                        if diagnostic.code in _USAGE_NOT_BELIEVED
                        else partial.output_tokens
                    )
                    self._reported_output_tokens += (
                        partial.streamed_tokens
                        if diagnostic.code in _USAGE_CONTRADICTED
                        else partial.output_tokens
                    )
            case Cancelled():
                self._cancelled += 1

    def _fold_sketches(self) -> None:
        first = (self._dispatch_lag, self._e2e, self._e2e_from_target, self._prompt_tokens)
        then = (self._output_tokens, self._ttft, self._decode, self._tpot, self._per_user)
        for sketch in (*first, *then, self._ttst):  # each takes at most one value a record
            sketch._fold()

    def _add_completed(self, response: GenerationResponse, targeted_start_ns: int) -> None:
        timing = response.timing
        send = timing.send_ns
        end = timing.end_ns
        e2e = end - send
        self._e2e._pending.append(e2e)
        self._e2e_from_target._pending.append(end - targeted_start_ns)
        # `output_tokens`, `output_token_source` and `prompt_tokens` of the response, read from
        # its usage once instead of through three properties.
        usage = response.usage
        output_tokens: int | None = None
        prompt_tokens: int | None = None
        if usage is not None:
            output_tokens = usage.completion_tokens
            prompt_tokens = usage.prompt_tokens
        if prompt_tokens is not None:
            self._prompt_tokens._pending.append(prompt_tokens)
            self._usable_prompt_tokens += prompt_tokens
        if response.sent is not None:
            self._inputs.add(response)
        answer = response.answer
        if type(answer) is TextAnswer:  # a final class: the other kinds are matched below
            self._add_generated(response, e2e, output_tokens)
            return
        # Any other kind is not tokens: no output count, no token timing; E2E is the latency.
        match answer:
            case Vectors():
                self._embeddings += 1
            case Scores():
                self._scored += 1
                self._usable_documents += response.echo.documents or 0  # the work done
            case unknown:  # a new kind of answer decides what it counts here
                assert_never(unknown)
        self._not_streamed += not response.streamed
        slo = self.slo
        if slo is not None and _meets(slo, e2e, None, 0.0, e2e):
            self._good += 1

    def _add_generated(
        self, response: GenerationResponse, e2e: int, output_tokens: int | None
    ) -> None:
        # Generated text: output tokens (usage, else the streamed count) and, when it streamed,
        # the token timings.
        timing = response.timing
        send = timing.send_ns
        if output_tokens is None:
            output_tokens = response.streamed_tokens
            source = response.streamed_token_source
        else:
            source = _FROM_USAGE
        self._output_tokens._pending.append(output_tokens)
        self._usable_output_tokens += output_tokens
        self._attempted_output_tokens += output_tokens
        self._reported_output_tokens += output_tokens
        sources = self._output_sources
        sources[source] = sources.get(source, 0) + 1
        times = timing.chunk_times_ns
        counts = timing.chunk_tokens
        # The common case: every chunk counted one token (then chunk i brought token i + 1).
        one_per_chunk = len(counts) == len(times) and counts.count(1) == len(counts)
        if output_tokens > 0:
            add_arrivals(
                self._output_by_second, self.bucket_origin_ns, timing, output_tokens, one_per_chunk
            )

        if not response.streamed:
            # The answer came whole: when its first token arrived is not observed. For the SLO
            # the client saw its first token with the end of the body, so TTFT there is E2E.
            self._not_streamed += 1
            slo = self.slo
            if slo is not None and _meets(slo, e2e, None, 0.0, e2e):
                self._good += 1
            return

        ttft: int | None = None
        tpot: float | None = None
        first_token = timing.first_token_ns
        if first_token is not None:
            ttft = first_token - send
            self._ttft._pending.append(ttft)
            self._decode._pending.append(e2e - ttft)
            if output_tokens >= 2:
                tpot = (e2e - ttft) / (output_tokens - 1)
                self._tpot._pending.append(tpot)
                if tpot > 0:
                    self._per_user._pending.append(1e9 / tpot)
            if one_per_chunk:
                if len(times) > 1:
                    self._ttst._pending.append(times[1] - first_token)
            else:
                second_token = second_token_ns(timing)
                if second_token is not None:
                    self._ttst._pending.append(second_token - first_token)

        worst_gap = self._add_gaps(times, counts, one_per_chunk) if len(times) > 1 else 0.0
        slo = self.slo
        if slo is not None and _meets(slo, ttft, tpot, worst_gap, e2e):
            self._good += 1

    def _add_gaps(
        self, times: tuple[int, ...], counts: tuple[int, ...], one_per_chunk: bool
    ) -> float:
        """Add the ITL samples of a streamed answer of two chunks or more; return its worst gap."""
        if one_per_chunk and times.count(times[0]) == len(times):
            # Every chunk in one read (a fast server's short answer): no gap to sample and every
            # token after the first coalesced, as `add_spread_gaps` counts them.
            self._itl_coalesced += len(times) - 1
            return 0.0
        if one_per_chunk:
            # Each chunk's time minus the one before, without a Python step per token.
            gaps: list[int] = list(map(operator.sub, itertools.islice(times, 1, None), times))
            shortest = min(gaps)
            if shortest > 0:
                # The common case, one token per chunk and one chunk per read: one sample per
                # gap, added in one batch.
                widest = max(gaps)
                self._itl.add_all(gaps, low=shortest, high=widest)
                return widest
        worst_gap, coalesced = add_spread_gaps(self._itl, times, counts)
        self._itl_coalesced += coalesced
        return worst_gap

    def merge(self, other: StepAggregator) -> None:
        """Fold `other` (the same step aggregated elsewhere) into this aggregator."""
        if (
            other.slo != self.slo
            or other.window != self.window
            or other.bucket_origin_ns != self.bucket_origin_ns
        ):
            raise ConfigError(
                "cannot merge step aggregators with different SLOs, windows or origins: "
                f"{self.slo} / {self.window} / {self.bucket_origin_ns} vs "
                f"{other.slo} / {other.window} / {other.bucket_origin_ns}"
            )
        self._completed += other._completed
        self._errored += other._errored
        self._cancelled += other._cancelled
        self._excluded += other._excluded
        self._good += other._good
        self._not_streamed += other._not_streamed
        self._itl_coalesced += other._itl_coalesced
        self._embeddings += other._embeddings
        self._scored += other._scored
        self._usable_documents += other._usable_documents
        for code, other_tally in other._errors.items():
            tally = self._errors.get(code)
            if tally is None:
                self._errors[code] = _ErrorTally(other_tally.count, other_tally.example)
            else:
                tally.count += other_tally.count
        for mine, theirs in (
            (self._ttft, other._ttft),
            (self._itl, other._itl),
            (self._tpot, other._tpot),
            (self._e2e, other._e2e),
            (self._e2e_from_target, other._e2e_from_target),
            (self._dispatch_lag, other._dispatch_lag),
            (self._output_tokens, other._output_tokens),
            (self._prompt_tokens, other._prompt_tokens),
            (self._ttst, other._ttst),
            (self._decode, other._decode),
            (self._per_user, other._per_user),
        ):
            mine.merge(theirs)
        self._usable_prompt_tokens += other._usable_prompt_tokens
        buckets = self._output_by_second
        for second, tokens in other._output_by_second.items():
            buckets[second] = buckets.get(second, 0) + tokens
        for source, n in other._output_sources.items():
            self._output_sources[source] = self._output_sources.get(source, 0) + n
        self._usable_output_tokens += other._usable_output_tokens
        self._attempted_output_tokens += other._attempted_output_tokens
        self._reported_output_tokens += other._reported_output_tokens
        self._concurrency.merge(other._concurrency)
        self._inputs.merge(other._inputs)
        if other._first_dispatch_ns is not None and (
            self._first_dispatch_ns is None or other._first_dispatch_ns < self._first_dispatch_ns
        ):
            self._first_dispatch_ns = other._first_dispatch_ns
        if other._last_finish_ns is not None and (
            self._last_finish_ns is None or other._last_finish_ns > self._last_finish_ns
        ):
            self._last_finish_ns = other._last_finish_ns

    def snapshot(self) -> StepMetrics:
        """The frozen figures of everything added so far."""
        outcomes = Outcomes(
            dispatched=self._completed + self._errored + self._cancelled,
            completed=self._completed,
            errored=self._errored,
            cancelled=self._cancelled,
        )
        if self.window is not None:
            start_ns: int | None = self.window.start_ns
            end_ns: int | None = self.window.end_ns
        else:
            start_ns, end_ns = self._first_dispatch_ns, self._last_finish_ns
        duration_ns = end_ns - start_ns if start_ns is not None and end_ns is not None else 0
        duration_s = duration_ns / 1e9

        def per_s(amount: float) -> float:
            return amount / duration_s if duration_s > 0 else 0.0

        peak = self._concurrency.peak()
        finished = self._completed + self._errored
        # Input counts only when the server gave one for every completed request.
        input_tokens: int | None = None
        if self._completed and self._prompt_tokens.count == self._completed:
            input_tokens = self._usable_prompt_tokens
        peak_tokens: int | None = None
        peak_at_s: float | None = None
        if self._output_by_second:
            # The fullest second; the earliest of equal ones.
            peak_second, peak_tokens = max(
                sorted(self._output_by_second.items()), key=lambda item: item[1]
            )
            peak_at_s = float(peak_second)
        goodput = None
        if self.slo is not None:
            goodput = Goodput(
                slo=self.slo,
                good=self._good,
                requests_per_s=per_s(self._good),
                fraction=self._good / finished if finished else 0.0,
            )
        return StepMetrics(
            outcomes=outcomes,
            excluded=self._excluded,
            error_rate=outcomes.error_rate,
            errors_by_code={
                code: ErrorSummary(count=tally.count, example=tally.example)
                for code, tally in sorted(self._errors.items())
            },
            latency=Latency(
                ttft_ms=self._ttft.summary(_MS),
                itl_ms=self._itl.summary(_MS),
                tpot_ms=self._tpot.summary(_MS),
                e2e_ms=self._e2e.summary(_MS),
                e2e_from_target_ms=self._e2e_from_target.summary(_MS),
                dispatch_lag_ms=self._dispatch_lag.summary(_MS),
                not_streamed=self._not_streamed,
                itl_coalesced_gaps=self._itl_coalesced,
                ttst_ms=self._ttst.summary(_MS),
                decode_ms=self._decode.summary(_MS),
            ),
            tokens=Tokens(
                output_per_request=self._output_tokens.summary(),
                prompt_per_request=self._prompt_tokens.summary(),
                output_sources=dict(self._output_sources),
                prompt_reported=self._prompt_tokens.count,
                embeddings=self._embeddings,
                scored=self._scored,
                reported_output_tokens=self._reported_output_tokens,
            ),
            throughput=Throughput(
                duration_s=duration_s,
                usable_requests_per_s=per_s(self._completed),
                attempted_requests_per_s=per_s(outcomes.dispatched),
                usable_output_tokens_per_s=per_s(self._usable_output_tokens),
                attempted_output_tokens_per_s=per_s(self._attempted_output_tokens),
                usable_output_tokens=self._usable_output_tokens,
                attempted_output_tokens=self._attempted_output_tokens,
                usable_input_tokens=input_tokens,
                usable_input_tokens_per_s=None if input_tokens is None else per_s(input_tokens),
                usable_total_tokens_per_s=(
                    None
                    if input_tokens is None
                    else per_s(input_tokens + self._usable_output_tokens)
                ),
                peak_output_tokens_per_s=peak_tokens,
                peak_output_at_s=peak_at_s,
                per_user_output_tokens_per_s=self._per_user.summary(),
                usable_documents=self._usable_documents,
                usable_documents_per_s=per_s(self._usable_documents),
            ),
            concurrency=Concurrency(
                mean=per_s(self._concurrency.in_flight_ns / 1e9),
                max=peak.peak,
                max_upper_bound=peak.upper_bound,
                resolution_ns=peak.resolution_ns,
            ),
            goodput=goodput,
            start_ns=start_ns,
            end_ns=end_ns,
            inputs=self._inputs.snapshot(),
        )


def _meets(
    slo: Slo, ttft_ns: int | None, tpot_ns: float | None, worst_gap_ns: float, e2e_ns: int
) -> bool:
    if slo.ttft_ms is not None and (ttft_ns is None or ttft_ns * _MS > slo.ttft_ms):
        return False
    if slo.tpot_ms is not None and tpot_ns is not None and tpot_ns * _MS > slo.tpot_ms:
        return False
    if slo.itl_ms is not None and worst_gap_ns * _MS > slo.itl_ms:
        return False
    return not (slo.e2e_ms is not None and e2e_ns * _MS > slo.e2e_ms)
