"""Is a rerank or score answer usable: results present, one per document (or rerank's
`top_n`), each naming a document sent and none twice, every score a finite number.

Each check has its own code, so a report tells a server that lost results from one that
scored a document it was never sent. A text or vectors answer passes all four untouched.
"""

from __future__ import annotations

from returns.result import Result, Success

from assay.core.answer import Scores, ScoreSummary
from assay.core.diagnostics import DiagnosticCode, UnusableResponse
from assay.core.response import GenerationResponse
from assay.validators.chain import reject, screened

# Each screen passes an answer of another kind by its type, as its validator does.


def _has_results(response: GenerationResponse) -> bool:
    answer = response.answer
    return type(answer) is not Scores or (answer.summary is not None and answer.summary.count > 0)


def _count_as_expected(response: GenerationResponse) -> bool:
    answer, expected = response.answer, response.echo.expected_results
    if type(answer) is not Scores or expected is None:
        return True
    return answer.summary is not None and answer.summary.count == expected


def _indices_within(response: GenerationResponse) -> bool:
    answer = response.answer
    if type(answer) is not Scores or answer.summary is None or answer.summary.count == 0:
        return True
    summary, documents = answer.summary, response.echo.documents
    lowest, highest = summary.lowest_index, summary.highest_index
    return (
        summary.repeated_index is None
        and (lowest is None or lowest >= 0)
        and (documents is None or highest is None or highest < documents)
    )


def _all_finite(response: GenerationResponse) -> bool:
    answer = response.answer
    return type(answer) is not Scores or answer.summary is None or answer.summary.non_finite == 0


@screened(_has_results)
def no_results(response: GenerationResponse) -> Result[GenerationResponse, UnusableResponse]:
    """A rerank or score answer with no results at all: nothing was scored.

    >>> from assay.core import Endpoint, RequestEcho, ResponseTiming, Scores
    >>> r = GenerationResponse(request_id="r1", endpoint=Endpoint.rerank, streamed=False,
    ...                        echo=RequestEcho(documents=8, expected_results=8),
    ...                        answer=Scores(summary=ScoreSummary(count=0)),
    ...                        timing=ResponseTiming(send_ns=0, end_ns=1))
    >>> print(no_results(r).failure().message)
    rerank answer has no results for 8 documents
    """
    match response.answer:
        case Scores(summary=summary):
            documents = response.echo.documents
            if summary is not None and summary.count > 0:
                return Success(response)
            return reject(
                response,
                DiagnosticCode.no_results,
                f"{response.endpoint} answer has no results for {_documents(documents)}",
            )
        case _:
            return Success(response)


@screened(_count_as_expected)
def result_count_mismatch(
    response: GenerationResponse,
) -> Result[GenerationResponse, UnusableResponse]:
    """More or fewer results than asked for: one per document, or rerank's `top_n`.

    >>> from assay.core import Endpoint, RequestEcho, ResponseTiming, Scores
    >>> r = GenerationResponse(request_id="r1", endpoint=Endpoint.score, streamed=False,
    ...                        echo=RequestEcho(documents=8, expected_results=8),
    ...                        answer=Scores(summary=ScoreSummary(
    ...                            count=5, lowest_index=0, highest_index=4)),
    ...                        timing=ResponseTiming(send_ns=0, end_ns=1))
    >>> print(result_count_mismatch(r).failure().message)
    score answer has 5 results for 8 documents (8 expected)
    """
    match response.answer:
        case Scores(summary=summary):
            documents, expected = response.echo.documents, response.echo.expected_results
            count = 0 if summary is None else summary.count
            if expected is None or count == expected:
                return Success(response)
            return reject(
                response,
                DiagnosticCode.result_count_mismatch,
                f"{response.endpoint} answer has {count} results for {_documents(documents)} "
                f"({expected} expected)",
            )
        case _:
            return Success(response)


@screened(_indices_within)
def invalid_result_index(
    response: GenerationResponse,
) -> Result[GenerationResponse, UnusableResponse]:
    """A result naming a document that was not sent (index below 0 or past the last), or a
    document already named by another result.

    >>> from assay.core import Endpoint, RequestEcho, ResponseTiming, Scores
    >>> r = GenerationResponse(request_id="r1", endpoint=Endpoint.rerank, streamed=False,
    ...                        echo=RequestEcho(documents=4, expected_results=4),
    ...                        answer=Scores(summary=ScoreSummary(
    ...                            count=4, lowest_index=0, highest_index=4)),
    ...                        timing=ResponseTiming(send_ns=0, end_ns=1))
    >>> print(invalid_result_index(r).failure().message)
    rerank answer names document index 4, outside 0..3 (4 documents)
    """
    match response.answer:
        case Scores(summary=ScoreSummary() as summary) if summary.count:
            return _index_problem(response, summary, response.echo.documents)
        case _:
            return Success(response)


def _index_problem(
    response: GenerationResponse, summary: ScoreSummary, documents: int | None
) -> Result[GenerationResponse, UnusableResponse]:
    lowest, highest = summary.lowest_index, summary.highest_index
    outside: int | None = None
    if lowest is not None and lowest < 0:
        outside = lowest
    elif documents is not None and highest is not None and highest >= documents:
        outside = highest
    if outside is not None:
        last = f"0..{documents - 1}" if documents is not None else "0.."
        return reject(
            response,
            DiagnosticCode.invalid_result_index,
            f"{response.endpoint} answer names document index {outside}, outside {last} "
            f"({_documents(documents)})",
        )
    if summary.repeated_index is not None:
        return reject(
            response,
            DiagnosticCode.invalid_result_index,
            f"{response.endpoint} answer names document index {summary.repeated_index} more "
            f"than once",
        )
    return Success(response)


@screened(_all_finite)
def non_finite_score(response: GenerationResponse) -> Result[GenerationResponse, UnusableResponse]:
    """A result whose score is NaN or infinite: no ranking can be read from it.

    >>> from assay.core import Endpoint, RequestEcho, ResponseTiming, Scores
    >>> r = GenerationResponse(request_id="r1", endpoint=Endpoint.score, streamed=False,
    ...                        answer=Scores(summary=ScoreSummary(
    ...                            count=3, lowest_index=0, highest_index=2, non_finite=1)),
    ...                        timing=ResponseTiming(send_ns=0, end_ns=1))
    >>> print(non_finite_score(r).failure().message)
    score answer has 1 non-finite score (NaN or infinity) among its 3 results
    """
    match response.answer:
        case Scores(summary=ScoreSummary() as summary) if summary.non_finite:
            pass
        case _:
            return Success(response)
    plural = "" if summary.non_finite == 1 else "s"
    return reject(
        response,
        DiagnosticCode.non_finite_score,
        f"{response.endpoint} answer has {summary.non_finite} non-finite score{plural} "
        f"(NaN or infinity) among its {summary.count} results",
    )


def _documents(documents: int | None) -> str:
    if documents is None:
        return "an unknown number of documents"
    return f"{documents} document{'' if documents == 1 else 's'}"


__all__ = ["invalid_result_index", "no_results", "non_finite_score", "result_count_mismatch"]
