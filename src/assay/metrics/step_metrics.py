"""The frozen snapshot of one profile step's figures, as reports store and print them."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from assay.core.diagnostics import AnyCode
from assay.core.response import TokenSource
from assay.metrics.inputs import Inputs
from assay.metrics.sketch import Distribution
from assay.metrics.slo import Slo


class Outcomes(BaseModel):
    """How the dispatched requests ended; `completed + errored + cancelled == dispatched`."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    dispatched: int = 0
    completed: int = 0
    errored: int = 0
    cancelled: int = 0

    @property
    def error_rate(self) -> float:
        """errored / (completed + errored); cancelled requests were cut by the run, not the server.

        >>> Outcomes(dispatched=4, completed=3, errored=1).error_rate
        0.25
        """
        finished = self.completed + self.errored
        return self.errored / finished if finished else 0.0

    def plus(self, other: Outcomes) -> Outcomes:
        """The sum of two outcome counts (steps into totals)."""
        return Outcomes(
            dispatched=self.dispatched + other.dispatched,
            completed=self.completed + other.completed,
            errored=self.errored + other.errored,
            cancelled=self.cancelled + other.cancelled,
        )


class ErrorSummary(BaseModel):
    """How often one diagnostic code occurred, with the first message seen as an example."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    count: int
    example: str


class Latency(BaseModel):
    """Latency distributions in milliseconds; `None` where no request had the figure.

    `not_streamed` counts completed answers that came whole: they have an E2E but no TTFT, ITL
    or TPOT (not measured, rather than a made-up 0). `itl_coalesced_gaps` counts token gaps the
    transport hid: tokens that arrived in the same network read as the token before them. Their
    read's gap is spread over its tokens in `itl_ms` (see `assay.metrics.aggregator`).

    `ttst_ms` is the time from the first token to the second (answers of 2+ tokens);
    `decode_ms` is E2E - TTFT, the part of a streamed answer after its first token, so that
    `ttft_ms` (prefill, queueing and network included) and `decode_ms` split the same answers'
    E2E. Both are None in reports written before they existed.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    ttft_ms: Distribution | None = None
    itl_ms: Distribution | None = None
    tpot_ms: Distribution | None = None
    e2e_ms: Distribution | None = None
    e2e_from_target_ms: Distribution | None = None
    dispatch_lag_ms: Distribution | None = None
    not_streamed: int = 0
    itl_coalesced_gaps: int = 0
    ttst_ms: Distribution | None = None
    decode_ms: Distribution | None = None


def _nothing(value: float) -> bool:
    """A figure left out of report.json: zero, for a kind of answer the run did not have."""
    return value == 0


class Tokens(BaseModel):
    """Token counts per completed request and where the counts came from.

    `output_sources` counts completed requests by the source of their output count (server
    usage, running usage, assay's streamed count); `prompt_reported` how many had a server prompt
    count (the prompt distribution uses only those). `embeddings` counts completed embeddings
    answers and `scored` completed rerank and score answers, which have no output tokens and
    are left out of the output figures.
    `reported_output_tokens` sums the output tokens of every answer, usable or not, as the server
    reported them (its usage; the streamed count where it gave none or the stream contradicted
    it): the figure the server's own token counter is checked against (None in reports of
    versions before it).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    output_per_request: Distribution | None = None
    prompt_per_request: Distribution | None = None
    output_sources: dict[TokenSource, int] = {}
    prompt_reported: int = 0
    embeddings: int = 0
    # Written only by a run that scored documents, so earlier reports are written back as read.
    scored: int = Field(default=0, exclude_if=_nothing)
    # Left out of report.json when None, so a report of an earlier version is written back whole.
    reported_output_tokens: int | None = Field(default=None, exclude_if=lambda value: value is None)

    @property
    def output_source_note(self) -> str:
        """A short phrase naming the output count sources, e.g. "server usage 98, streamed 2".

        >>> Tokens(output_sources={TokenSource.usage: 3}).output_source_note
        'server usage 3'
        """
        names = {
            TokenSource.usage: "server usage",
            TokenSource.continuous_usage: "running usage",
            TokenSource.stream: "streamed count",
            TokenSource.none: "no count",
        }
        parts = [
            f"{names[s]} {self.output_sources[s]}"
            for s in TokenSource
            if self.output_sources.get(s)
        ]
        return ", ".join(parts) if parts else "none"


class Throughput(BaseModel):
    """Rates over the step's duration: usable counts completed requests only, attempted all.

    Input and total token rates use the server's prompt counts of the completed requests; they
    are None unless every completed request had one (a partial sum would understate them).
    `peak_output_tokens_per_s` is the most output tokens of completed requests that arrived in
    one second-long bucket, the buckets counted from the step's start (the measured window's
    start with warm-up), and `peak_output_at_s` where that bucket starts;
    `per_user_output_tokens_per_s` is, per streamed answer of 2+ tokens, its decode rate
    (output tokens - 1) / (E2E - TTFT). See `assay.metrics.aggregator` for the exact rules.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    duration_s: float = 0.0
    usable_requests_per_s: float = 0.0
    attempted_requests_per_s: float = 0.0
    usable_output_tokens_per_s: float = 0.0
    attempted_output_tokens_per_s: float = 0.0
    usable_output_tokens: int = 0
    attempted_output_tokens: int = 0
    usable_input_tokens: int | None = None
    usable_input_tokens_per_s: float | None = None
    usable_total_tokens_per_s: float | None = None
    peak_output_tokens_per_s: int | None = None
    peak_output_at_s: float | None = None
    per_user_output_tokens_per_s: Distribution | None = None
    # Documents scored by completed rerank and score answers (each document of a request, also
    # those a rerank `top_n` left out of the answer); written only by a run that scored some.
    usable_documents: int = Field(default=0, exclude_if=_nothing)
    usable_documents_per_s: float = Field(default=0.0, exclude_if=_nothing)


class Concurrency(BaseModel):
    """Mean (exact) and peak in-flight requests; the true peak lies in [max, max_upper_bound]."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    mean: float = 0.0
    max: int = 0
    max_upper_bound: int = 0
    resolution_ns: int = 0


class Goodput(BaseModel):
    """Completed requests that met every limit of the SLO.

    `fraction` is good / (completed + errored), the same denominator as the error rate.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    slo: Slo
    good: int
    requests_per_s: float
    fraction: float


class StepMetrics(BaseModel):
    """Everything measured in one step. Latency figures come from completed requests only."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    outcomes: Outcomes
    excluded: int = 0
    error_rate: float = 0.0
    errors_by_code: dict[AnyCode, ErrorSummary] = {}
    latency: Latency = Latency()
    tokens: Tokens = Tokens()
    throughput: Throughput = Throughput()
    concurrency: Concurrency = Concurrency()
    goodput: Goodput | None = None
    start_ns: int | None = None
    end_ns: int | None = None
    # Images, audio and body bytes of requests that carried images or audio; left out of the
    # JSON for text alone, so a text run's report is what it was before the field existed.
    inputs: Inputs | None = Field(default=None, exclude_if=lambda inputs: inputs is None)
