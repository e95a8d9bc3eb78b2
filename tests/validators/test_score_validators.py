"""Rerank and score answers: no results, a wrong count, a bad index, a non-finite score; each
with its own code, and none of the text validators erroring an answer that has no text."""

from __future__ import annotations

import pytest

from assay.core import (
    DiagnosticCode,
    Endpoint,
    GenerationResponse,
    RequestEcho,
    ResponseTiming,
    Scores,
    ScoreSummary,
    TextAnswer,
    Usage,
)
from assay.validators import (
    Validator,
    default_chain,
    empty_response,
    invalid_result_index,
    missing_finish_reason,
    no_results,
    non_finite_score,
    result_count_mismatch,
)


def _answer(
    summary: ScoreSummary | None,
    *,
    endpoint: Endpoint = Endpoint.rerank,
    documents: int = 4,
    expected: int = 4,
) -> GenerationResponse:
    return GenerationResponse(
        request_id="r1",
        endpoint=endpoint,
        streamed=False,
        echo=RequestEcho(documents=documents, expected_results=expected),
        answer=Scores(summary=summary),
        usage=Usage(prompt_tokens=40, total_tokens=40),
        terminal_seen=True,
        timing=ResponseTiming(send_ns=0, end_ns=1),
    )


GOOD = ScoreSummary(count=4, lowest_index=0, highest_index=3)


@pytest.mark.parametrize("endpoint", [Endpoint.rerank, Endpoint.score])
@pytest.mark.parametrize("strict", [False, True])
def test_a_full_ranking_passes_the_default_chain(endpoint: Endpoint, strict: bool) -> None:
    answer = _answer(GOOD, endpoint=endpoint)
    assert default_chain(endpoint, strict=strict)(answer).unwrap() is answer


def test_an_answer_with_no_text_is_not_an_empty_response() -> None:
    answer = _answer(GOOD)
    assert empty_response(answer).unwrap() is answer
    assert missing_finish_reason(answer).unwrap() is answer


@pytest.mark.parametrize("summary", [ScoreSummary(count=0), None])
def test_no_results_is_no_results(summary: ScoreSummary | None) -> None:
    problem = default_chain(Endpoint.score)(_answer(summary, endpoint=Endpoint.score)).failure()
    assert problem.code is DiagnosticCode.no_results
    assert problem.message == "score answer has no results for 4 documents"


def test_fewer_results_than_documents_is_result_count_mismatch() -> None:
    short = ScoreSummary(count=3, lowest_index=0, highest_index=2)
    problem = default_chain(Endpoint.rerank)(_answer(short)).failure()
    assert problem.code is DiagnosticCode.result_count_mismatch
    assert problem.message == "rerank answer has 3 results for 4 documents (4 expected)"


def test_top_n_results_pass_and_more_than_top_n_do_not() -> None:
    best_two = ScoreSummary(count=2, lowest_index=1, highest_index=3)
    assert result_count_mismatch(_answer(best_two, expected=2)).unwrap().answer == Scores(
        summary=best_two
    )
    problem = result_count_mismatch(_answer(GOOD, expected=2)).failure()
    assert problem.code is DiagnosticCode.result_count_mismatch


@pytest.mark.parametrize(
    ("summary", "words"),
    [
        (ScoreSummary(count=4, lowest_index=0, highest_index=4), "index 4, outside 0..3"),
        (ScoreSummary(count=4, lowest_index=-1, highest_index=2), "index -1, outside 0..3"),
        (
            ScoreSummary(count=4, lowest_index=0, highest_index=3, repeated_index=2),
            "index 2 more than once",
        ),
    ],
)
def test_a_bad_index_is_invalid_result_index(summary: ScoreSummary, words: str) -> None:
    problem = default_chain(Endpoint.rerank)(_answer(summary)).failure()
    assert problem.code is DiagnosticCode.invalid_result_index
    assert words in problem.message


def test_a_nan_score_is_non_finite_score() -> None:
    summary = ScoreSummary(count=4, lowest_index=0, highest_index=3, non_finite=2)
    problem = default_chain(Endpoint.score)(_answer(summary, endpoint=Endpoint.score)).failure()
    assert problem.code is DiagnosticCode.non_finite_score
    assert problem.message == (
        "score answer has 2 non-finite scores (NaN or infinity) among its 4 results"
    )


@pytest.mark.parametrize(
    "check", [no_results, result_count_mismatch, invalid_result_index, non_finite_score]
)
def test_the_score_validators_leave_text_answers_alone(
    check: Validator[GenerationResponse],
) -> None:
    chat = GenerationResponse(
        request_id="c1",
        endpoint=Endpoint.chat,
        streamed=False,
        answer=TextAnswer(text="Paris."),
        timing=ResponseTiming(send_ns=0, end_ns=1),
    )
    assert check(chat).unwrap() is chat
