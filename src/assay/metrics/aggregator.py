"""Streaming aggregation of one profile step's records into `StepMetrics`, in bounded memory.

Definitions (all times are monotonic ns of the run's clock, reported in ms):

- TTFT = first token - send.
- ITL: one sample per token gap. A token-bearing chunk arriving `g` ns after the previous one
  and carrying `k` tokens gives `k` samples of `g / k` (its tokens are taken to have arrived
  evenly over the gap). The first chunk's tokens follow the send, not a token, so they belong
  to TTFT and give no ITL sample: a response gives `output tokens - tokens of the first chunk`
  samples (15 for 16 one-token chunks).
- TPOT = (E2E - TTFT) / (output tokens - 1), for responses with >= 2 output tokens.
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
of their partial response, when there is one).

Throughput is over the step's duration: the window when one is given, else first dispatch to last
finish of the counted records. Usable = completed only; attempted = everything dispatched.
Mean concurrency = sum of in-flight (dispatch to finish) durations / duration; the peak is
bracketed in bounded memory (see `assay.metrics.concurrency`).

With a window, only records whose targeted start falls in [start_ns, end_ns) are counted; the
others are counted as `excluded` and nothing else.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, model_validator

from assay.core.diagnostics import AnyCode
from assay.core.response import GenerationResponse, TokenSource
from assay.errors import ConfigError
from assay.metrics.concurrency import ConcurrencyTracker
from assay.metrics.sketch import QuantileSketch
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
        "_dispatch_lag",
        "_e2e",
        "_e2e_from_target",
        "_errored",
        "_errors",
        "_excluded",
        "_first_dispatch_ns",
        "_good",
        "_itl",
        "_last_finish_ns",
        "_output_sources",
        "_output_tokens",
        "_prompt_tokens",
        "_tpot",
        "_ttft",
        "_usable_output_tokens",
        "slo",
        "window",
    )

    def __init__(self, slo: Slo | None = None, window: TimeWindow | None = None) -> None:
        self.slo = slo
        self.window = window
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
        self._usable_output_tokens = 0
        self._attempted_output_tokens = 0
        self._concurrency = ConcurrencyTracker()
        self._first_dispatch_ns: int | None = None
        self._last_finish_ns: int | None = None

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
        self._dispatch_lag.add(dispatched - record.targeted_start_ns)
        match record.outcome:
            case Completed(response=response):
                self._completed += 1
                self._add_completed(response, record.targeted_start_ns)
            case Errored(diagnostic=diagnostic):
                self._errored += 1
                tally = self._errors.get(diagnostic.code)
                if tally is None:
                    self._errors[diagnostic.code] = _ErrorTally(1, diagnostic.message)
                else:
                    tally.count += 1
                partial = diagnostic.evidence.partial
                if partial is not None:
                    self._attempted_output_tokens += partial.output_tokens
            case Cancelled():
                self._cancelled += 1

    def _add_completed(self, response: GenerationResponse, targeted_start_ns: int) -> None:
        timing = response.timing
        send = timing.send_ns
        end = timing.end_ns
        # `output_tokens`, `output_token_source` and `prompt_tokens` of the response, read from
        # its usage once instead of through three properties.
        usage = response.usage
        output_tokens: int | None = None
        prompt_tokens: int | None = None
        if usage is not None:
            output_tokens = usage.completion_tokens
            prompt_tokens = usage.prompt_tokens
        if output_tokens is None:
            output_tokens = response.streamed_tokens
            source = response.streamed_token_source
        else:
            source = TokenSource.usage
        e2e = end - send
        self._e2e.add(e2e)
        self._e2e_from_target.add(end - targeted_start_ns)
        self._output_tokens.add(output_tokens)
        self._usable_output_tokens += output_tokens
        self._attempted_output_tokens += output_tokens
        sources = self._output_sources
        sources[source] = sources.get(source, 0) + 1
        if prompt_tokens is not None:
            self._prompt_tokens.add(prompt_tokens)

        ttft: int | None = None
        tpot: float | None = None
        if timing.first_token_ns is not None:
            ttft = timing.first_token_ns - send
            self._ttft.add(ttft)
            if output_tokens >= 2:
                tpot = (e2e - ttft) / (output_tokens - 1)
                self._tpot.add(tpot)

        worst_gap = 0.0
        times = timing.chunk_times_ns
        if len(times) > 1:
            counts = timing.chunk_tokens
            if len(counts) == len(times) and counts.count(1) == len(counts):
                # The common case, one token per chunk: one sample per gap, added in one batch.
                gaps = [b - a for a, b in itertools.pairwise(times)]
                self._itl.add_all(gaps)
                worst_gap = max(gaps)
            else:
                worst_gap = self._add_spread_gaps(times, counts)

        slo = self.slo
        if slo is not None and _meets(slo, ttft, tpot, worst_gap, e2e):
            self._good += 1

    def _add_spread_gaps(self, times: tuple[int, ...], counts: tuple[int, ...]) -> float:
        """Add the ITL samples of chunks carrying several tokens; return the worst gap."""
        worst_gap = 0.0
        itl = self._itl
        previous = times[0]
        for i in range(1, len(times)):
            tokens = counts[i] if i < len(counts) else 1
            if tokens <= 0:
                # A chunk without tokens: its gap carries over to the next token.
                continue
            at = times[i]
            gap = (at - previous) / tokens
            itl.add(gap, tokens)
            worst_gap = max(worst_gap, gap)
            previous = at
        return worst_gap

    def merge(self, other: StepAggregator) -> None:
        """Fold `other` (the same step aggregated elsewhere) into this aggregator."""
        if other.slo != self.slo or other.window != self.window:
            raise ConfigError(
                "cannot merge step aggregators with different SLOs or windows: "
                f"{self.slo} / {self.window} vs {other.slo} / {other.window}"
            )
        self._completed += other._completed
        self._errored += other._errored
        self._cancelled += other._cancelled
        self._excluded += other._excluded
        self._good += other._good
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
        ):
            mine.merge(theirs)
        for source, n in other._output_sources.items():
            self._output_sources[source] = self._output_sources.get(source, 0) + n
        self._usable_output_tokens += other._usable_output_tokens
        self._attempted_output_tokens += other._attempted_output_tokens
        self._concurrency.merge(other._concurrency)
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
            ),
            tokens=Tokens(
                output_per_request=self._output_tokens.summary(),
                prompt_per_request=self._prompt_tokens.summary(),
                output_sources=dict(self._output_sources),
                prompt_reported=self._prompt_tokens.count,
            ),
            throughput=Throughput(
                duration_s=duration_s,
                usable_requests_per_s=per_s(self._completed),
                attempted_requests_per_s=per_s(outcomes.dispatched),
                usable_output_tokens_per_s=per_s(self._usable_output_tokens),
                attempted_output_tokens_per_s=per_s(self._attempted_output_tokens),
                usable_output_tokens=self._usable_output_tokens,
                attempted_output_tokens=self._attempted_output_tokens,
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
