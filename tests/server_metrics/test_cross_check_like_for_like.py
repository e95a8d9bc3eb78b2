"""The server-metrics cross-check compares like with like (issue 20 item 3): the server counts
the tokens of every answer it generated, usable or not, so assay's side counts every answer's
reported tokens too. vLLM's forced-empty answers (no text, 20 tokens in usage) read "server
generated 20 tokens; assay counted 0" before."""

from __future__ import annotations

from assay.benchmark.server_observation import assay_counts
from assay.core import (
    DiagnosticCode,
    Endpoint,
    Evidence,
    GenerationResponse,
    ResponseTiming,
    TextAnswer,
    TokenSource,
    UnusableResponse,
    Usage,
)
from assay.metrics import StepAggregator
from assay.records import Completed, Errored, JudgedBy, RequestRecord
from assay.reports import StepReport
from assay.server_metrics import ServerCounts, cross_check

MS = 1_000_000


def _response(i: int, text: str, usage_tokens: int | None, streamed: int) -> GenerationResponse:
    return GenerationResponse(
        request_id=f"r{i}",
        endpoint=Endpoint.chat,
        streamed=True,
        answer=TextAnswer(text=text),
        finish_reason="stop",
        usage=None
        if usage_tokens is None
        else Usage(prompt_tokens=8, completion_tokens=usage_tokens),
        content_chunks=streamed,
        streamed_tokens=streamed,
        streamed_token_source=TokenSource.stream,
        terminal_seen=True,
        timing=ResponseTiming(send_ns=i * MS, first_token_ns=i * MS + MS, end_ns=i * MS + 5 * MS),
    )


def _record(
    i: int, response: GenerationResponse, code: DiagnosticCode | None = None
) -> RequestRecord[GenerationResponse]:
    outcome = (
        Completed(response=response)
        if code is None
        else Errored(
            diagnostic=UnusableResponse(
                code=code, message=str(code), evidence=Evidence(http_status=200, partial=response)
            ),
            judged_by=JudgedBy.validator,
        )
    )
    return RequestRecord[GenerationResponse](
        request_id=f"r{i}",
        targeted_start_ns=i * MS,
        dispatched_ns=i * MS,
        finished_ns=i * MS + 5 * MS,
        outcome=outcome,
    )


def _step(*records: RequestRecord[GenerationResponse]) -> StepReport:
    aggregator = StepAggregator()
    for record in records:
        aggregator.add(record)
    return StepReport.of(0, "throughput", aggregator.snapshot())


def test_forced_empty_answers_count_the_tokens_the_server_reported() -> None:
    # 3 answers of 16 tokens, and 2 empty answers whose usage says 20 tokens each (vLLM counts
    # what it generated, even when none of it was text).
    step = _step(
        *(_record(i, _response(i, "x" * 16, 16, 16)) for i in range(3)),
        *(_record(i, _response(i, "", 20, 0), DiagnosticCode.empty_response) for i in range(3, 5)),
    )
    assert step.metrics.throughput.attempted_output_tokens == 48  # throughput: nothing served
    counts = assay_counts([step])
    assert counts.output_tokens == 48 + 40
    checks = cross_check(ServerCounts(requests_finished=5, generation_tokens=88), counts)
    assert all(check.agrees for check in checks), checks


def test_a_usage_the_stream_contradicted_counts_as_streamed() -> None:
    # usage_mismatch: the usage said 4, 16 tokens were streamed; the server generated 16.
    step = _step(_record(0, _response(0, "x" * 16, 4, 16), DiagnosticCode.usage_mismatch))
    assert assay_counts([step]).output_tokens == 16


def test_a_report_without_the_reported_figure_falls_back_to_attempted() -> None:
    step = _step(_record(0, _response(0, "x" * 16, 16, 16)))
    tokens = step.metrics.tokens.model_copy(update={"reported_output_tokens": None})
    older = step.model_copy(update={"metrics": step.metrics.model_copy(update={"tokens": tokens})})
    assert assay_counts([older]).output_tokens == 16
