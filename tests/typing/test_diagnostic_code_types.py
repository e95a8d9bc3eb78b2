"""Type-level facts of diagnostic codes and verdicts: custom codes are their own type beside the
built-in enum, whose typing stays exact, and the one judge returns a typed verdict."""

from __future__ import annotations

from typing import assert_type

from returns.result import Result, Success

from assay.core import (
    AnyCode,
    CustomCode,
    DiagnosticCode,
    Endpoint,
    GenerationResponse,
    ResponseTiming,
    Stage,
    TextAnswer,
    UnusableResponse,
    parse_code,
    stage_of,
)
from assay.records import Completed, Errored, JudgedBy
from assay.validators import Validator, chain, default_chain, reject
from assay.worker import judge
from tests.typing.test_exhaustive_match import _mypy

NOT_POLITE = CustomCode("myorg.not_polite", meaning="the answer did not say please")

ANSWER = GenerationResponse(
    request_id="t1",
    endpoint=Endpoint.chat,
    streamed=False,
    answer=TextAnswer(text="Paris."),
    finish_reason="stop",
    timing=ResponseTiming(send_ns=0, end_ns=1),
)


def polite(response: GenerationResponse) -> Result[GenerationResponse, UnusableResponse]:
    return reject(response, NOT_POLITE, "no please")


def test_custom_and_builtin_codes_keep_their_own_types() -> None:
    assert_type(NOT_POLITE, CustomCode)
    builtin: DiagnosticCode = DiagnosticCode.empty_response
    assert_type(stage_of(builtin), Stage)
    assert_type(NOT_POLITE.value, str)
    assert_type(NOT_POLITE.stage, Stage)
    assert_type(stage_of(NOT_POLITE), Stage)
    assert_type(parse_code("empty_response"), DiagnosticCode | CustomCode)
    diagnostic = polite(ANSWER).failure()
    assert_type(diagnostic.code, AnyCode)
    assert_type(diagnostic.code, DiagnosticCode | CustomCode)
    assert diagnostic.code == NOT_POLITE


def test_a_validator_reporting_a_custom_code_composes_like_any_other() -> None:
    composed = chain(default_chain(Endpoint.chat), polite)
    assert_type(composed, Validator[GenerationResponse])


def test_judge_returns_a_completed_or_errored_verdict() -> None:
    verdict = judge(Success(ANSWER), chain(default_chain(Endpoint.chat), polite))
    assert_type(verdict, Completed[GenerationResponse] | Errored)
    assert isinstance(verdict, Errored)
    assert_type(verdict.judged_by, JudgedBy)
    assert_type(verdict.validator, str | None)
    assert verdict.validator == "tests.typing.test_diagnostic_code_types:polite"


def test_a_bare_string_code_is_a_type_error() -> None:
    run = _mypy("plain_string_code.py")
    assert run.returncode == 1, run.stdout + run.stderr
    assert 'Argument "code" to "UnusableResponse" has incompatible type "str"' in run.stdout
    assert "Found 1 error in 1 file" in run.stdout
