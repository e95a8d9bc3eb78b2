"""The one judgement of an answer: what `assay run` records and `assay revalidate` re-decides.

A failure the resolver returned (transport or handler: there was no usable answer) is final;
otherwise the validators decide, one at a time, so the verdict names the validator that gave it.
A validator that raises is recorded, never propagated: a user's validator gets
`validator_error` (a bug in that validator), a built-in one `internal_error` (a bug in assay).
Both commands call `judge`, so they cannot disagree.
"""

from __future__ import annotations

import traceback
from typing import TypeVar

from returns.result import Failure, Result, Success

from assay.core.diagnostics import DiagnosticCode, Evidence, UnusableResponse
from assay.core.outcome import outcome
from assay.core.response import GenerationResponse
from assay.core.trusted import trusted
from assay.records.record import Completed, Errored, JudgedBy
from assay.validators.chain import Validator, screened_steps

R = TypeVar("R")

_ASSAY_MODULE = "assay"


def judge(answer: Result[R, UnusableResponse], validate: Validator[R]) -> Completed[R] | Errored:
    """The terminal verdict on `answer`: completed, or errored with the part that decided.

    >>> from assay.core import DiagnosticCode
    >>> def odd(n: int) -> Result[int, UnusableResponse]:
    ...     if n % 2:
    ...         return Success(n)
    ...     return Failure(UnusableResponse(code=DiagnosticCode.empty_response, message="even"))
    >>> judge(Success(3), odd)
    Completed(status='completed', response=3)
    >>> verdict = judge(Success(4), odd)
    >>> verdict.judged_by.value, verdict.validator
    ('validator', 'assay.worker.judge:odd')
    >>> gone = UnusableResponse(code=DiagnosticCode.connect_error, message="refused")
    >>> judge(Failure(gone), odd).judged_by.value
    'transport'
    """
    if type(answer) is Success:
        # Nearly every answer: read without the two class patterns' instance checks (returns'
        # containers are ABCs), the same verdict as the `Success` arm below.
        return _validated(answer.unwrap(), validate)
    match outcome(answer):
        case Failure(problem):
            return Errored(diagnostic=problem, judged_by=JudgedBy.of_resolver_failure(problem))
        case Success(response):
            return _validated(response, validate)


def _validated(response: R, validate: Validator[R]) -> Completed[R] | Errored:
    """Run the validators one by one, so a verdict (or an exception) names its validator.

    A validator whose screen passes is skipped: the screen promises it would accept the
    response unchanged. A screen that raises promises nothing, so the validator decides.
    """
    for name, step, screen in screened_steps(validate):
        if screen is not None:
            try:
                accepts = screen(response)
            except Exception:
                accepts = False
            if accepts:
                continue
        try:
            result = step(response)
        except Exception as error:
            return Errored(
                diagnostic=_raised(name, step, error, response),
                judged_by=JudgedBy.validator,
                validator=name,
            )
        # Plain isinstance tests, not `match outcome(...)`: this runs per validator per response.
        # Kept in variables so mypy does not narrow `result` to `Failure[Any]`/`Success[Any]`,
        # whose `failure()`/`unwrap()` would be untyped.
        failed = isinstance(result, Failure)
        if failed:
            return Errored(
                diagnostic=_with_response(result.failure(), response),
                judged_by=JudgedBy.validator,
                validator=name,
            )
        accepted = isinstance(result, Success)
        if not accepted:
            # A validator is typed to return a Result; one that does not is its author's bug.
            wrong = TypeError(f"it returned {type(result).__name__}, not Success or Failure")
            return Errored(
                diagnostic=_raised(name, step, wrong, response),
                judged_by=JudgedBy.validator,
                validator=name,
            )
        response = result.unwrap()
    # Built unvalidated: the response is the resolver's (or a validator's) typed value.
    completed: Completed[R] = trusted(Completed, {"status": "completed", "response": response})
    return completed


def _with_response(problem: UnusableResponse, response: object) -> UnusableResponse:
    """A validator's diagnostic with the judged response and its HTTP status as evidence.

    The response makes the verdict re-judgeable later, and the status belongs to the exchange
    whoever found the problem; a validator that built its own evidence keeps what it set.
    `Evidence` holds a `GenerationResponse`, so other response types are left as they are.
    """
    evidence = problem.evidence
    if not isinstance(response, GenerationResponse) or (
        evidence.partial is not None and evidence.http_status is not None
    ):
        return problem
    partial = evidence.partial or response
    status = evidence.http_status if evidence.http_status is not None else partial.http_status
    if partial is evidence.partial and status == evidence.http_status:
        return problem
    filled = evidence.model_copy(update={"partial": partial, "http_status": status})
    return problem.model_copy(update={"evidence": filled})


def _raised(name: str, step: Validator[R], error: Exception, response: R) -> UnusableResponse:
    """The diagnostic of a validator that raised, keeping the response so it can be re-judged."""
    module = getattr(step, "__module__", None) or ""
    builtin = module == _ASSAY_MODULE or module.startswith(f"{_ASSAY_MODULE}.")
    partial = response if isinstance(response, GenerationResponse) else None
    raised = f"raised {type(error).__name__}: {error}"
    if builtin:
        code = DiagnosticCode.internal_error
        message = f"internal error: the built-in validator {name!r} {raised}"
    else:
        code = DiagnosticCode.validator_error
        message = f"validator {name!r} {raised} (a bug in that validator, not in the server)"
    return UnusableResponse(
        code=code,
        message=message,
        evidence=Evidence(
            http_status=None if partial is None else partial.http_status,
            partial=partial,
            traceback="".join(traceback.format_exception(type(error), error, error.__traceback__)),
        ),
    )
