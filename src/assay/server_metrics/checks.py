"""The cross-check: the server's counter deltas over the run beside what assay counted.

Each check ends in one of three verdicts: it agrees, it disagrees (a warning), or it cannot
compare (assay has no figure of its own to put beside the server's, as for a non-streamed
transcription, whose usage is the audio's duration). Where a server counts differently from one
request and its output tokens per answer (see `accounting`), a figure that matches the server's
way exactly agrees and says so ("vLLM counts one request per document: 400 = 100 answers x 4
documents").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from assay.server_metrics.accounting import PLAIN, Accounting
from assay.server_metrics.families import ServerKind
from assay.spec.endpoint import Endpoint

# A token count may differ by this fraction before the check calls it a disagreement: servers
# count the EOS token or a final empty chunk differently from the usage they report.
TOKEN_TOLERANCE_FRACTION = 0.01

Verdict = Literal["agrees", "disagrees", "cannot compare"]


class ServerCounts(BaseModel):
    """Counter deltas over an interval; None where the server does not expose the quantity."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    requests_finished: float | None = None
    prompt_tokens: float | None = None
    generation_tokens: float | None = None


class CrossCheck(BaseModel):
    """One quantity as the server counted it against what assay counted, and the verdict.

    `compared` is False when assay had no figure to compare (then `agrees` is True: nothing
    disagreed, and the message says why there was nothing to compare).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    quantity: str
    server: float
    assay: int
    allowed_low: float
    allowed_high: float
    agrees: bool
    message: str
    # Left out of report.json when True, so a report of an earlier version is written back whole.
    compared: bool = Field(default=True, exclude_if=lambda compared: compared)

    @property
    def verdict(self) -> Verdict:
        """ "agrees", "disagrees" or "cannot compare"."""
        if not self.compared:
            return "cannot compare"
        return "agrees" if self.agrees else "disagrees"


@dataclass(frozen=True, slots=True)
class AssayCounts:
    """What assay counted over the run, in the terms the server's counters use.

    `answered`: requests that got an answer assay read to its end (completed, or errored at the
    content stage); `unfinished`: requests whose end assay did not see (cancelled in flight, or
    cut at the transport after sending), which the server may or may not have finished;
    `output_tokens`: output tokens of every answer (completed and partial);
    `max_output_tokens`: the most output tokens one request had;
    `completed`: the answers among `answered` that assay found complete and usable (None: not
    known, as in a report of an earlier version);
    `documents`: the documents the completed rerank and score answers scored;
    `uncounted`: completed answers that carried no output token count at all;
    `outside`: requests sent outside the measured window (warm-up, cool-down), which the server
    served but assay's figures leave out, so they widen the allowed range as unfinished ones do.
    """

    answered: int
    unfinished: int
    output_tokens: int
    max_output_tokens: int
    completed: int | None = None
    documents: int = 0
    uncounted: int = 0
    outside: int = 0

    @property
    def unseen(self) -> int:
        """Requests the server may have served that assay's figures do not hold."""
        return self.unfinished + self.outside


@dataclass(frozen=True, slots=True)
class _Way:
    """Another way a server counts: its range and the words that explain a match."""

    low: float
    high: float
    explains: str


def cross_check(
    run: ServerCounts,
    assay: AssayCounts,
    kind: ServerKind | None = None,
    accounting: Accounting = PLAIN,
) -> tuple[CrossCheck, ...]:
    """Compare the server's run totals with assay's (see `AssayCounts` for the terms).

    Requests: the server must have finished at least every answer assay read and at most those
    plus the ones whose end assay did not see. Tokens: within 1 % plus the most a request can
    carry for each unfinished request. `kind` and `accounting` add the server's own way of
    counting (vLLM's per-document pooling requests, its language-detection pass).

    >>> checks = cross_check(ServerCounts(requests_finished=10, generation_tokens=160),
    ...                      AssayCounts(answered=10, unfinished=0, output_tokens=160,
    ...                                  max_output_tokens=16))
    >>> [check.verdict for check in checks]
    ['agrees', 'agrees']
    """
    checks: list[CrossCheck] = []
    if run.requests_finished is not None:
        checks.append(_requests_check(run.requests_finished, assay, kind, accounting))
    if run.generation_tokens is not None:
        checks.append(_tokens_check(run.generation_tokens, assay, kind, accounting))
    return tuple(checks)


def _requests_check(
    server: float, assay: AssayCounts, kind: ServerKind | None, accounting: Accounting
) -> CrossCheck:
    low, high = float(assay.answered), float(assay.answered + assay.unseen)
    way: _Way | str | None = None
    if kind is ServerKind.vllm and accounting.scores_documents:
        way = _per_document(server, assay, accounting)
    elif kind is ServerKind.vllm and accounting.may_detect_language:
        way = _Way(
            2.0 * assay.answered,
            2.0 * (assay.answered + assay.unseen),
            "vLLM runs a language-detection request before each transcription sent without a "
            f"language: {server:g} = {assay.answered} answers x 2",
        )
    if low <= server <= high:
        message = f"server finished {server:g} requests; assay read {assay.answered} answers"
        if assay.outside:
            message += f" (and sent {assay.outside} outside the measured window)"
        return _check("requests_finished", server, assay.answered, low, high, message)
    if isinstance(way, _Way) and way.low <= server <= way.high:
        return _check("requests_finished", server, assay.answered, way.low, way.high, way.explains)
    if isinstance(way, str):
        message = f"{way}; server finished {server:g} requests, assay read {assay.answered} answers"
        return _check("requests_finished", server, assay.answered, low, high, message, False)
    if server < low:
        message = (
            f"server reports {server:g} finished requests but assay read {assay.answered} "
            "answers: the server's counter misses requests, or counts only some outcomes"
        )
    else:
        message = (
            f"server reports {server:g} finished requests, more than the {assay.answered} "
            f"answers assay read plus {assay.unfinished} it did not see end"
            + (f" and {assay.outside} outside the measured window" if assay.outside else "")
            + ": other traffic "
            "reached the server, or answers never arrived"
        )
    if isinstance(way, _Way):
        message += f" (counted the server's way, {way.low:g} to {way.high:g} were allowed)"
    return CrossCheck(
        quantity="requests_finished", server=server, assay=assay.answered,
        allowed_low=low, allowed_high=high, agrees=False, message=message,
    )  # fmt: skip


def _per_document(server: float, assay: AssayCounts, accounting: Accounting) -> _Way | str:
    """vLLM's count on rerank and score: one engine request per (query, document) pair; or
    why assay cannot know the documents behind its answers."""
    rule = "vLLM counts one request per document"
    completed = assay.answered if assay.completed is None else assay.completed
    unusable = assay.answered - completed
    each = accounting.documents_per_request
    if each is not None:
        low = float(assay.documents + unusable * each)
        high = low + assay.unseen * each
        return _Way(low, high, f"{rule}: {server:g} = {assay.answered} answers x {each} documents")
    if unusable == 0 and assay.unseen == 0:
        documents = float(assay.documents)
        return _Way(
            documents,
            documents,
            f"{rule}: {server:g} = the {assay.documents} documents of {assay.answered} answers",
        )
    unknown = unusable + assay.unseen
    return (
        f"{rule}, and {unknown} request{'s' * (unknown != 1)} of the data file not answered "
        "usably do not say how many documents they had"
    )


def _tokens_check(
    server: float, assay: AssayCounts, kind: ServerKind | None, accounting: Accounting
) -> CrossCheck:
    counted = assay.output_tokens
    if assay.uncounted:
        why = f"{assay.uncounted} of {assay.answered} answers carried no token count"
        if accounting.endpoint is Endpoint.transcriptions:
            why += ": a non-streamed transcription's usage is the audio's duration, not tokens"
        message = f"{why}; server generated {server:g} tokens"
        return _check("generation_tokens", server, counted, 0.0, 0.0, message, False)
    slack = TOKEN_TOLERANCE_FRACTION * counted + assay.unseen * assay.max_output_tokens
    low, high = max(counted - slack, 0.0), counted + slack
    if low <= server <= high:
        message = (
            f"server generated {server:g} tokens; assay counted {counted} "
            f"(agrees, allowed {low:g} to {high:g})"
        )
        return _check("generation_tokens", server, counted, low, high, message)
    if kind is ServerKind.vllm and accounting.may_detect_language:
        extra_low, extra_high = assay.answered, assay.answered + assay.unseen
        if low + extra_low <= server <= high + extra_high:
            message = (
                "vLLM generates one language-detection token before each transcription sent "
                f"without a language: {server:g} = {counted} + {assay.answered}"
            )
            return _check(
                "generation_tokens", server, counted, low + extra_low, high + extra_high, message
            )
    message = (
        f"server generated {server:g} tokens; assay counted {counted} "
        f"(DISAGREES, allowed {low:g} to {high:g})"
    )
    return CrossCheck(
        quantity="generation_tokens", server=server, assay=counted,
        allowed_low=low, allowed_high=high, agrees=False, message=message,
    )  # fmt: skip


def _check(
    quantity: str,
    server: float,
    counted: int,
    low: float,
    high: float,
    message: str,
    compared: bool = True,
) -> CrossCheck:
    return CrossCheck(
        quantity=quantity, server=server, assay=counted, allowed_low=low, allowed_high=high,
        agrees=True, message=message, compared=compared,
    )  # fmt: skip


__all__ = [
    "TOKEN_TOLERANCE_FRACTION",
    "AssayCounts",
    "CrossCheck",
    "ServerCounts",
    "Verdict",
    "cross_check",
]
