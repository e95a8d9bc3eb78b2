"""`assay revalidate --strict`: answers the default chain accepted but the strict chain does not
(no finish_reason) turn errored in a new report beside the run; the run's own files stay."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from tests.cli.cli_harness import (
    CliResult,
    assert_every_request_accounted,
    read_record_lines,
    read_report,
    run_assay,
    run_fast,
)

from assay.backend import wire_request_id
from assay.mock import choose_fault

SEED = 11
RATES = {"missing_finish_reason": 0.3}
REQUESTS = 120


@pytest.fixture(scope="module")
def lenient_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A run whose mock leaves out finish_reason on 30 % of answers, judged by the default chain.

    Non-streamed: a chat stream that ends without finish_reason is an error by default; in a
    body only the strict chain requires one.
    """
    run_dir = tmp_path_factory.mktemp("lenient")
    result = run_fast(
        run_dir,
        "--mock-fault", "missing_finish_reason=0.3", "--seed", str(SEED),
        "--profile", "concurrent", "--concurrency", "8", "--max-requests", str(REQUESTS),
        "--processes", "1", "--no-stream",
    )  # fmt: skip
    assert result.exit_code == 0, result.stdout + result.stderr
    return run_dir


def digests(run_dir: Path) -> dict[str, str]:
    names = ("report.json", "records.jsonl", "summary.csv")
    return {name: hashlib.sha256((run_dir / name).read_bytes()).hexdigest() for name in names}


def written_to(result: CliResult) -> Path:
    """The folder a revalidation says it wrote (each one gets its own: revalidated, -2, ...)."""
    return Path(result.stdout.rpartition("files: ")[2].strip().removesuffix("/"))


def injected_among_completed(run_dir: Path) -> int:
    return sum(
        line["status"] == "completed"
        and choose_fault(SEED, RATES, wire_request_id(line["id"])) is not None
        for line in read_record_lines(run_dir)
    )


def test_default_chain_lets_a_missing_finish_reason_through(lenient_run: Path) -> None:
    report = assert_every_request_accounted(lenient_run)
    assert report.totals.outcomes.completed == REQUESTS
    assert injected_among_completed(lenient_run) > 0


def test_strict_revalidation_errors_every_answer_without_finish_reason(lenient_run: Path) -> None:
    before = digests(lenient_run)
    result: CliResult = run_assay("revalidate", lenient_run, "--strict")
    # 30 % errored is above the run's 5 % threshold: the revalidated run is invalid.
    assert result.exit_code == 1, result.stdout + result.stderr
    assert "INVALID RUN" in result.stdout
    expected = injected_among_completed(lenient_run)
    assert f"revalidated: {expected} completed -> errored, 0 errored -> completed" in result.stdout
    new_dir = written_to(result)
    new = assert_every_request_accounted(new_dir)
    counts = {code.value: summary.count for code, summary in new.totals.errors_by_code.items()}
    assert counts == {"missing_finish_reason": expected}
    assert new.totals.outcomes.dispatched == REQUESTS
    assert new.totals.outcomes.completed == REQUESTS - expected
    assert "strict" in str(new.run_config.validator_chain)
    for line in read_record_lines(new_dir):
        faulted = choose_fault(SEED, RATES, wire_request_id(line["id"])) is not None
        assert line["status"] == ("errored" if faulted else "completed"), line
    assert digests(lenient_run) == before
    old = read_report(lenient_run)
    assert old.totals.outcomes.completed == REQUESTS
    assert old.totals.errors_by_code == {}


def test_revalidate_without_strict_changes_no_verdict(lenient_run: Path) -> None:
    result = run_assay("revalidate", lenient_run, "--max-error-rate", "0.5")
    assert result.exit_code == 0, result.stdout + result.stderr
    assert "revalidated: 0 completed -> errored, 0 errored -> completed" in result.stdout
    report = read_report(written_to(result))
    assert report.totals.outcomes.completed == REQUESTS


def test_revalidating_a_session_run_keeps_its_sessions_and_judges_its_turns_again(
    tmp_path: Path,
) -> None:
    run_dir = tmp_path / "run"
    result = run_fast(
        run_dir, "--profile", "concurrent", "--concurrency", "2", "--turns", "3",
        "--max-requests", "4", "--processes", "1", "--mock-fault", "missing_finish_reason=0.3",
        "--seed", str(SEED), "--no-stream",
    )  # fmt: skip
    assert result.exit_code == 0, result.stdout + result.stderr
    ran = read_report(run_dir).steps[0]
    assert ran.sessions is not None
    assert ran.turns is not None
    result = run_assay("revalidate", run_dir, "--strict", "--max-error-rate", "1")
    assert result.exit_code == 0, result.stdout + result.stderr
    again = read_report(written_to(result)).steps[0]
    # What was sent stays; every turn's figures are judged again, turn by turn.
    assert again.sessions == ran.sessions
    assert again.turns is not None
    assert sorted(again.turns) == sorted(ran.turns) == [1, 2, 3]
    errored = {turn: metrics.outcomes.errored for turn, metrics in again.turns.items()}
    by_turn = dict.fromkeys(again.turns, 0)
    for line in read_record_lines(written_to(result)):
        by_turn[line["turn"]] += line["status"] == "errored"
    assert errored == by_turn
    assert sum(errored.values()) > sum(m.outcomes.errored for m in ran.turns.values())


def test_revalidation_names_the_codes_of_answers_errored_under_another_one(
    lenient_run: Path,
) -> None:
    strict = run_assay("revalidate", lenient_run, "--strict", "--max-error-rate", "1")
    strict_dir = written_to(strict)
    strict_codes = {line.get("code") for line in read_record_lines(strict_dir)}
    strict_codes.discard(None)
    (code,) = strict_codes  # the strict chain's one code for a missing finish_reason
    errored = sum(line["status"] == "errored" for line in read_record_lines(strict_dir))
    # Judged again by the default chain and a validator that raises: every answer the strict
    # chain errored is now errored as validator_error, and the line says from which code.
    again = run_assay(
        "revalidate", strict_dir, "--validator", "tests.cli.judge_checks:explodes",
        "--max-error-rate", "1", python_path=Path(__file__).resolve().parents[2],
    )  # fmt: skip
    said = " ".join(again.stdout.split())
    assert f"{errored} errored under another code ({errored} {code} -> validator_error)" in said, (
        said
    )
