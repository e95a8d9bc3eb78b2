"""The cross-check knows how each server counts (issue 38 items 1-3): vLLM runs one engine
request per (query, document) pair on rerank and score, and a language-detection request (one
token) before each transcription sent without a language; a non-streamed transcription carries
no token count, so the token check cannot compare. None of these is a false warning."""

from __future__ import annotations

from assay.reports.server_section import server_metrics_lines
from assay.server_metrics import (
    Accounting,
    AssayCounts,
    CrossCheck,
    ServerCounts,
    ServerKind,
    cross_check,
)
from assay.spec.endpoint import Endpoint
from assay.spec.run import RunEcho

RERANK_4 = Accounting(endpoint=Endpoint.rerank, documents_per_request=4)
RERANK_DATA = Accounting(endpoint=Endpoint.rerank, documents_per_request=None)
NO_LANGUAGE = Accounting(endpoint=Endpoint.transcriptions, language_sent=False)
WITH_LANGUAGE = Accounting(endpoint=Endpoint.transcriptions, language_sent=True)


def scored(answers: int, documents: int, completed: int | None = None) -> AssayCounts:
    return AssayCounts(
        answered=answers,
        unfinished=0,
        output_tokens=0,
        max_output_tokens=0,
        completed=answers if completed is None else completed,
        documents=documents,
    )


def transcribed(answers: int, tokens: int, uncounted: int = 0) -> AssayCounts:
    return AssayCounts(
        answered=answers,
        unfinished=0,
        output_tokens=tokens,
        max_output_tokens=16,
        completed=answers,
        uncounted=uncounted,
    )


def requests_check(checks: tuple[CrossCheck, ...]) -> CrossCheck:
    return next(check for check in checks if check.quantity == "requests_finished")


def tokens_check(checks: tuple[CrossCheck, ...]) -> CrossCheck:
    return next(check for check in checks if check.quantity == "generation_tokens")


def test_vllm_rerank_counts_one_request_per_document_and_agrees() -> None:
    check = requests_check(
        cross_check(
            ServerCounts(requests_finished=400), scored(100, 400), ServerKind.vllm, RERANK_4
        )
    )
    assert check.verdict == "agrees"
    assert check.message == "vLLM counts one request per document: 400 = 100 answers x 4 documents"


def test_a_server_counting_http_requests_on_rerank_still_agrees() -> None:
    check = requests_check(
        cross_check(
            ServerCounts(requests_finished=100), scored(100, 400), ServerKind.vllm, RERANK_4
        )
    )
    assert check.verdict == "agrees"
    assert check.message == "server finished 100 requests; assay read 100 answers"


def test_a_count_matching_neither_way_disagrees_and_names_both_ranges() -> None:
    check = requests_check(
        cross_check(
            ServerCounts(requests_finished=250), scored(100, 400), ServerKind.vllm, RERANK_4
        )
    )
    assert check.verdict == "disagrees"
    assert "400 to 400 were allowed" in check.message


def test_the_per_document_rule_is_vllms_only() -> None:
    check = requests_check(
        cross_check(
            ServerCounts(requests_finished=400), scored(100, 400), ServerKind.sglang, RERANK_4
        )
    )
    assert check.verdict == "disagrees"


def test_errored_answers_of_a_synthetic_run_count_their_documents_too() -> None:
    # 90 usable answers scored 360 documents; 10 unusable ones had 4 each as well.
    check = requests_check(
        cross_check(
            ServerCounts(requests_finished=400),
            scored(100, 360, completed=90),
            ServerKind.vllm,
            RERANK_4,
        )
    )
    assert check.verdict == "agrees"


def test_rows_of_a_data_file_agree_with_the_sum_of_their_documents() -> None:
    check = requests_check(
        cross_check(
            ServerCounts(requests_finished=1234), scored(100, 1234), ServerKind.vllm, RERANK_DATA
        )
    )
    assert check.verdict == "agrees"
    assert "the 1234 documents of 100 answers" in check.message


def test_unusable_rows_of_a_data_file_cannot_be_compared() -> None:
    check = requests_check(
        cross_check(
            ServerCounts(requests_finished=1234),
            scored(100, 1200, completed=99),
            ServerKind.vllm,
            RERANK_DATA,
        )
    )
    assert check.verdict == "cannot compare"
    assert check.agrees  # not a disagreement
    assert check.message.startswith("vLLM counts one request per document, and 1 request of")


def test_transcriptions_without_a_language_count_the_detection_pass_on_vllm() -> None:
    checks = cross_check(
        ServerCounts(requests_finished=40, generation_tokens=340),
        transcribed(20, 320),
        ServerKind.vllm,
        NO_LANGUAGE,
    )
    assert requests_check(checks).verdict == "agrees"
    assert requests_check(checks).message.endswith("language: 40 = 20 answers x 2")
    assert tokens_check(checks).verdict == "agrees"
    assert tokens_check(checks).message.endswith("without a language: 340 = 320 + 20")


def test_transcriptions_with_a_language_run_no_detection_pass() -> None:
    checks = cross_check(
        ServerCounts(requests_finished=40, generation_tokens=340),
        transcribed(20, 320),
        ServerKind.vllm,
        WITH_LANGUAGE,
    )
    assert [check.verdict for check in checks] == ["disagrees", "disagrees"]
    agreeing = cross_check(
        ServerCounts(requests_finished=20, generation_tokens=320),
        transcribed(20, 320),
        ServerKind.vllm,
        WITH_LANGUAGE,
    )
    assert [check.verdict for check in agreeing] == ["agrees", "agrees"]


def test_a_non_streamed_transcription_cannot_compare_tokens_issue_38() -> None:
    checks = cross_check(
        ServerCounts(requests_finished=20, generation_tokens=320),
        transcribed(20, 0, uncounted=20),
        ServerKind.vllm,
        WITH_LANGUAGE,
    )
    tokens = tokens_check(checks)
    assert tokens.verdict == "cannot compare"
    assert tokens.agrees
    assert not tokens.compared
    assert "20 of 20 answers carried no token count" in tokens.message
    assert "audio's duration" in tokens.message
    assert "DISAGREES" not in tokens.message


def test_the_console_line_says_cannot_compare_without_a_warning() -> None:
    from datetime import UTC, datetime

    from assay.reports.report import build_report
    from assay.server_metrics import ServerMetricsReport

    checks = cross_check(
        ServerCounts(requests_finished=20, generation_tokens=320),
        transcribed(20, 0, uncounted=20),
        ServerKind.vllm,
        WITH_LANGUAGE,
    )
    now = datetime(2026, 1, 1, tzinfo=UTC)
    section = ServerMetricsReport(
        url="http://127.0.0.1:1/metrics",
        kind=ServerKind.vllm,
        interval_s=1.0,
        scrapes=2,
        run=ServerCounts(requests_finished=20, generation_tokens=320),
        checks=checks,
    )
    report = build_report(
        run_config=RunEcho(), steps=[], started_at=now, finished_at=now, max_error_rate=0.05,
        server_metrics=section,
    )  # fmt: skip
    lines = server_metrics_lines(report)
    assert lines[2] == (
        "  generation_tokens: cannot compare (20 of 20 answers carried no token count: a "
        "non-streamed transcription's usage is the audio's duration, not tokens; server "
        "generated 320 tokens)"
    )
    assert not any("WARNING" in line for line in lines)
    again = ServerMetricsReport.model_validate_json(section.model_dump_json())
    assert again.checks[1].verdict == "cannot compare"
    assert "compared" not in section.model_dump()["checks"][0]
