"""One judge for `assay run` and `assay revalidate` (issue 10, items 1, 2 and 4): a failure the
transport or a handler produced stays that failure whatever validators come later; a user
validator that raises is its own bug, named; a user's own codes flow through every output."""

from __future__ import annotations

import shutil
from collections import Counter
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

REPO = Path(__file__).resolve().parents[2]
CHECKS = "tests.cli.judge_checks"
REQUESTS = 40


def assay(*args: str | Path) -> CliResult:
    """`assay ARGS` able to load this folder's `judge_checks` validators."""
    return run_assay(*args, python_path=REPO)


def codes(run_dir: Path) -> dict[str, int]:
    report = read_report(run_dir)
    return {str(code): summary.count for code, summary in report.totals.errors_by_code.items()}


def verdicts(run_dir: Path) -> dict[str, tuple[str, str | None]]:
    return {line["id"]: (line["status"], line.get("code")) for line in read_record_lines(run_dir)}


@pytest.fixture(scope="module")
def no_body_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The issue's run: half the answers are a 200 with an empty body."""
    run_dir = tmp_path_factory.mktemp("no_body")
    result = run_fast(
        run_dir, "--mock-fault", "no_body=0.5", "--max-requests", str(REQUESTS), "--seed", "7",
        "--processes", "1",
    )  # fmt: skip
    assert result.exit_code == 1, result.stdout + result.stderr
    return run_dir


@pytest.fixture
def copy_of_run(no_body_run: Path, tmp_path: Path) -> Path:
    """A fresh copy of the run, so each test revalidates a folder of its own."""
    return Path(shutil.copytree(no_body_run, tmp_path / "run"))


def test_run_records_the_handler_as_judge_of_an_empty_body(no_body_run: Path) -> None:
    errored = [line for line in read_record_lines(no_body_run) if line["status"] == "errored"]
    assert errored
    for line in errored:
        assert line["code"] == "no_terminal_response", line
        assert (line["judged_by"], line["validator"], line["http_status"]) == ("handler", None, 200)


def test_revalidate_with_the_same_chain_keeps_every_no_terminal_response(
    copy_of_run: Path,
) -> None:
    before = verdicts(copy_of_run)
    result = assay("revalidate", copy_of_run)
    assert result.exit_code == 1, result.stdout + result.stderr
    assert "0 completed -> errored, 0 errored -> completed, 0 errored under another code" in (
        " ".join(result.stdout.split())
    )
    assert_every_request_accounted(copy_of_run / "revalidated")
    assert verdicts(copy_of_run / "revalidated") == before
    assert codes(copy_of_run / "revalidated") == codes(copy_of_run)


def test_accept_all_validator_cannot_complete_an_answer_that_never_came(
    copy_of_run: Path,
) -> None:
    before = verdicts(copy_of_run)
    empty = sum(code == "no_terminal_response" for _, code in before.values())
    assert empty > 0
    result = assay(
        "revalidate", copy_of_run, "--no-default-validators", "--validator", f"{CHECKS}:accept_all"
    )
    assert result.exit_code == 1, result.stdout + result.stderr
    assert verdicts(copy_of_run / "revalidated") == before
    report = assert_every_request_accounted(copy_of_run / "revalidated")
    assert report.totals.outcomes.errored == empty
    assert codes(copy_of_run / "revalidated") == {"no_terminal_response": empty}


def test_raising_validator_in_revalidate_is_validator_error_not_a_traceback(
    copy_of_run: Path,
) -> None:
    before = verdicts(copy_of_run)
    result = assay("revalidate", copy_of_run, "--validator", f"{CHECKS}:explodes")
    assert "Traceback" not in result.stdout + result.stderr
    assert result.exit_code == 1, result.stdout + result.stderr
    assert "INVALID RUN" in result.stdout
    completed = sum(status == "completed" for status, _ in before.values())
    assert codes(copy_of_run / "revalidated") == {
        "no_terminal_response": REQUESTS - completed,
        "validator_error": completed,
    }
    for line in read_record_lines(copy_of_run / "revalidated"):
        if line.get("code") == "validator_error":
            assert line["stage"] == "user"
            assert (line["judged_by"], line["validator"]) == ("validator", f"{CHECKS}:explodes")
            assert line["message"].startswith(
                f"validator '{CHECKS}:explodes' raised RuntimeError: this check has a bug"
            )
            assert "RuntimeError" in line["traceback"]


def test_raising_validator_in_run_is_validator_error_not_internal_error(tmp_path: Path) -> None:
    result = assay(
        "run", "--mock-ttft-ms", "0", "--mock-itl-ms", "0", "--output-tokens", "8",
        "--max-requests", "8", "--processes", "1", "--output-dir", tmp_path,
        "--mock-fault", "http_500=0", "--validator", f"{CHECKS}:explodes",
    )  # fmt: skip
    assert "Traceback" not in result.stdout + result.stderr
    assert result.exit_code == 1, result.stdout + result.stderr
    assert codes(tmp_path) == {"validator_error": 8}


def test_custom_code_flows_through_records_report_and_revalidate(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    result = assay(
        "run", "--mock-ttft-ms", "0", "--mock-itl-ms", "0", "--output-tokens", "8",
        "--max-requests", "6", "--processes", "1", "--output-dir", run_dir,
        "--mock-fault", "http_500=0", "--validator", f"{CHECKS}:not_polite",
    )  # fmt: skip
    assert result.exit_code == 1, result.stdout + result.stderr
    assert "judgetest.not_polite" in result.stdout
    assert codes(run_dir) == {"judgetest.not_polite": 6}
    for line in read_record_lines(run_dir):
        assert (line["code"], line["stage"], line["judged_by"]) == (
            "judgetest.not_polite",
            "content",
            "validator",
        )
        # Issue 8, item 8: a validator's verdict keeps the exchange's HTTP status.
        assert line["http_status"] == 200
    again = assay("revalidate", run_dir, "--validator", f"{CHECKS}:not_polite")
    assert again.exit_code == 1, again.stdout + again.stderr
    assert codes(run_dir / "revalidated") == {"judgetest.not_polite": 6}


def test_dropping_the_custom_validator_completes_its_verdicts(tmp_path: Path) -> None:
    result = assay(
        "run", "--mock-ttft-ms", "0", "--mock-itl-ms", "0", "--output-tokens", "8",
        "--max-requests", "6", "--processes", "1", "--output-dir", tmp_path,
        "--validator", f"{CHECKS}:not_polite",
    )  # fmt: skip
    assert result.exit_code == 1, result.stdout + result.stderr
    again = assay("revalidate", tmp_path)
    assert again.exit_code == 0, again.stdout + again.stderr
    assert "0 completed -> errored, 6 errored -> completed" in " ".join(again.stdout.split())
    assert Counter(s for s, _ in verdicts(tmp_path / "revalidated").values()) == {"completed": 6}


def test_validators_lists_the_custom_codes_of_a_named_module() -> None:
    result = assay("validators", "--validator", f"{CHECKS}:not_polite")
    assert result.exit_code == 0, result.stdout + result.stderr
    lines = [" ".join(line.split()) for line in result.stdout.splitlines()]
    assert any(
        "judgetest.not_polite" in line and "the answer does not say please" in line
        for line in lines
    )
    assert any("judgetest.too_chatty" in line and "content" in line for line in lines)
    assert "validator_error" in result.stdout
    assert "PR #" not in result.stdout


def test_validators_with_a_module_that_does_not_exist_is_a_usage_error() -> None:
    result = assay("validators", "--validator", "no_such_package.checks:usable")
    assert result.exit_code == 2
    assert result.stderr.startswith("error: cannot load validator")
    assert "Traceback" not in result.stderr
