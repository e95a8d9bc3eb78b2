"""The error-rate rule of the verdict allows for chance (issue 20 item 1): a first run against the
embedded mock is not INVALID because 1 of 10 requests met an injected fault, while a server
that truly fails is. Every case is a hand-built count: no run, no randomness."""

from __future__ import annotations

import math
from datetime import UTC, datetime

import pytest

from assay.benchmark.run import injected_faults_caught
from assay.core.diagnostics import DiagnosticCode
from assay.metrics.step_metrics import ErrorSummary, Outcomes, StepMetrics
from assay.reports import Report, StepReport, build_report
from assay.reports.validity import CHANCE, assess_validity, chance_of_at_least
from assay.spec.run import RunEcho
from assay.spec.sections import DEMO_FAULTS

NOW = datetime(2026, 12, 4, tzinfo=UTC)


def outcomes(completed: int, errored: int) -> Outcomes:
    return Outcomes(dispatched=completed + errored, completed=completed, errored=errored)


def exact_tail(errors: int, finished: int, rate: float) -> float:
    return sum(
        math.comb(finished, k) * rate**k * (1 - rate) ** (finished - k)
        for k in range(errors, finished + 1)
    )


@pytest.mark.parametrize(
    ("errors", "finished", "rate"),
    [(1, 10, 0.05), (2, 10, 0.05), (3, 11, 0.05), (30, 100, 0.05), (12, 200, 0.05),
     (4, 200, 0.05), (60, 1000, 0.05), (1, 1, 0.3), (5, 5, 0.5)],
)  # fmt: skip
def test_chance_of_at_least_is_the_binomial_upper_tail(
    errors: int, finished: int, rate: float
) -> None:
    assert chance_of_at_least(errors, finished, rate) == pytest.approx(
        exact_tail(errors, finished, rate), rel=1e-9, abs=1e-15
    )


def test_chance_stays_finite_and_quick_for_a_million_requests() -> None:
    # 5.2 % of a million at a 5 % limit is far beyond chance; 5.01 % is not.
    assert chance_of_at_least(52_000, 1_000_000, 0.05) < 1e-6
    assert chance_of_at_least(50_100, 1_000_000, 0.05) > CHANCE


@pytest.mark.parametrize(("errored", "finished"), [(1, 10), (1, 11), (1, 8), (2, 10)])
def test_a_few_errors_in_a_small_run_are_a_note_not_an_invalid_run(
    errored: int, finished: int
) -> None:
    # The first hour: 1 error of 11 against the demo mock read as "broken".
    verdict = assess_validity(outcomes(finished - errored, errored), max_error_rate=0.05)
    assert verdict.valid
    assert verdict.reasons == ()
    (note,) = verdict.notes
    assert f"({errored} errored of {finished} finished) is above the allowed 5.0 %" in note
    assert "too few requests finished to tell it from chance" in note


def test_a_truly_failing_server_stays_invalid() -> None:
    # A mock with 30 % faults: 30 errors in 100 cannot be chance at a 5 % limit.
    verdict = assess_validity(outcomes(70, 30), max_error_rate=0.05)
    assert not verdict.valid
    (reason,) = verdict.reasons
    assert reason.startswith("error rate 30.0 % exceeds the allowed 5.0 % (30 errored of 100")
    assert "beyond chance" in reason
    assert "under 0.1 % of runs" in reason
    assert verdict.notes == ()


def test_three_errors_in_ten_are_beyond_chance() -> None:
    # The smallest count of a 10-request run that a 5 % server gives in under 5 % of runs.
    assert assess_validity(outcomes(8, 2), 0.05).valid
    assert not assess_validity(outcomes(7, 3), 0.05).valid


def test_a_large_run_just_over_the_limit_is_within_chance_and_noted() -> None:
    # 5.1 % of 10,000 at a 5 % limit: a server at exactly 5 % does this in about a third of runs.
    verdict = assess_validity(outcomes(9_490, 510), 0.05)
    assert verdict.valid
    assert len(verdict.notes) == 1
    # 6 % of 10,000 is not.
    assert not assess_validity(outcomes(9_400, 600), 0.05).valid


def test_a_zero_limit_refuses_any_error() -> None:
    assert not assess_validity(outcomes(999, 1), max_error_rate=0.0).valid


def test_a_rate_at_or_below_the_limit_has_no_note() -> None:
    verdict = assess_validity(outcomes(95, 5), 0.05)
    assert verdict.valid
    assert verdict.notes == ()


def _report_with_errors(mock_faults: dict[str, float], target: str | None) -> Report:
    metrics = StepMetrics(
        outcomes=Outcomes(dispatched=100, completed=96, errored=4),
        errors_by_code={
            DiagnosticCode.empty_response: ErrorSummary(count=2, example="empty"),
            DiagnosticCode.truncated_stream: ErrorSummary(count=1, example="cut"),
            DiagnosticCode.http_status: ErrorSummary(count=1, example="500"),
        },
    )
    return build_report(
        run_config=RunEcho.model_validate({"target": target, "mock_faults": mock_faults}),
        steps=[StepReport.of(0, "throughput", metrics)],
        started_at=NOW,
        finished_at=NOW,
        max_error_rate=0.05,
    )


def test_the_embedded_mocks_faults_are_told_as_caught() -> None:
    line = injected_faults_caught(_report_with_errors(DEMO_FAULTS, None))
    assert line is not None
    # The http_status error is no injected fault's code: not counted as one.
    assert "3 injected faults caught (empty_response 2, truncated_stream 1)" in line
    assert "empty_stream=0.01, truncated_stream=0.005, inband_error=0.005" in line


def test_no_fault_story_with_a_real_target_or_without_faults() -> None:
    assert injected_faults_caught(_report_with_errors({}, "http://127.0.0.1:1")) is None
    assert injected_faults_caught(_report_with_errors({"empty_stream": 0.0}, None)) is None
