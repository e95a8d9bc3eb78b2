"""A fault mixture through `assay run`: the codes in the report are exactly the faults the mock
injected, recomputed here from the request ids, and the split over processes changes nothing."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from tests.cli.cli_harness import (
    CliResult,
    assert_every_request_accounted,
    read_record_lines,
    run_fast,
)

from assay.backend import wire_request_id
from assay.mock import FAULTS, choose_fault
from assay.reports import Report

SEED = 7
RATES = {"empty_stream": 0.1, "http_500": 0.1, "truncated_stream": 0.1}
REQUESTS = 200


def run_mixture(run_dir: Path, processes: int, *extra: str) -> CliResult:
    faults = [arg for name, rate in RATES.items() for arg in ("--mock-fault", f"{name}={rate}")]
    return run_fast(
        run_dir,
        *faults,
        "--profile", "concurrent", "--concurrency", "8", "--max-requests", str(REQUESTS),
        "--seed", str(SEED), "--processes", str(processes), *extra,
    )  # fmt: skip


@pytest.fixture(scope="module")
def one_process(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, CliResult]:
    """The mixture in one process, with an error threshold the mixture stays under."""
    run_dir = tmp_path_factory.mktemp("p1")
    return run_dir, run_mixture(run_dir, 1, "--max-error-rate", "0.9")


@pytest.fixture(scope="module")
def two_processes(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, CliResult]:
    """The same mixture in two processes, with the default 5 % error threshold."""
    run_dir = tmp_path_factory.mktemp("p2")
    return run_dir, run_mixture(run_dir, 2)


def expected_code(request_id: str) -> str | None:
    """The code the client must report for this request: the mock's own choice, redone."""
    fault = choose_fault(SEED, RATES, wire_request_id(request_id))
    return None if fault is None else FAULTS[fault].code.value


def error_counts(report: Report) -> dict[str, int]:
    return {code.value: summary.count for code, summary in report.totals.errors_by_code.items()}


def test_mixture_under_the_error_threshold_is_a_valid_run(
    one_process: tuple[Path, CliResult],
) -> None:
    run_dir, result = one_process
    assert result.exit_code == 0, result.stdout + result.stderr
    assert "VALID RUN" in result.stdout
    report = assert_every_request_accounted(run_dir)
    assert report.validity.valid
    assert report.totals.outcomes.dispatched == REQUESTS


def test_errors_by_code_equal_the_faults_the_mock_injected(
    one_process: tuple[Path, CliResult],
) -> None:
    run_dir, _ = one_process
    report = assert_every_request_accounted(run_dir)
    lines = read_record_lines(run_dir)
    assert sorted(line["id"] for line in lines) == [f"req-{i:08d}" for i in range(REQUESTS)]
    injected = Counter(code for line in lines if (code := expected_code(line["id"])) is not None)
    assert len(injected) == 3  # every fault of the mixture was drawn at least once
    assert error_counts(report) == dict(injected)
    assert report.totals.outcomes.errored == sum(injected.values())
    assert report.totals.outcomes.cancelled == 0


def test_no_request_with_a_fault_is_completed_and_each_has_its_code(
    one_process: tuple[Path, CliResult],
) -> None:
    run_dir, _ = one_process
    for line in read_record_lines(run_dir):
        code = expected_code(line["id"])
        if code is None:
            assert line["status"] == "completed", line
        else:
            assert line["status"] == "errored", line
            assert line["code"] == code, line
            assert line["message"], line


def test_error_rate_above_the_threshold_is_an_invalid_run_with_exit_code_1(
    two_processes: tuple[Path, CliResult],
) -> None:
    run_dir, result = two_processes
    assert result.exit_code == 1, result.stdout + result.stderr
    assert "INVALID RUN" in result.stdout
    report = assert_every_request_accounted(run_dir)
    assert not report.validity.valid
    assert any("error rate" in reason for reason in report.validity.reasons)


def test_one_and_two_processes_count_the_same_outcomes_and_codes(
    one_process: tuple[Path, CliResult], two_processes: tuple[Path, CliResult]
) -> None:
    single = assert_every_request_accounted(one_process[0])
    double = assert_every_request_accounted(two_processes[0])
    assert double.run_config["processes"] == 2
    assert double.totals.outcomes == single.totals.outcomes
    assert error_counts(double) == error_counts(single)
    status_of = {line["id"]: line.get("code") for line in read_record_lines(one_process[0])}
    assert {line["id"]: line.get("code") for line in read_record_lines(two_processes[0])} == (
        status_of
    )
