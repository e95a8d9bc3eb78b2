"""mypy itself proves the worker's match is exhaustive: a missing `Failure` arm fails the check."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = Path(__file__).resolve().parent / "fixtures"


def _mypy(fixture: str) -> subprocess.CompletedProcess[str]:
    """Run mypy with the project's own options (mypy.ini: strict, returns plugin) on one file."""
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--config-file",
            str(ROOT / "mypy.ini"),
            str(FIXTURES / fixture),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_match_without_failure_arm_is_rejected_as_non_exhaustive() -> None:
    run = _mypy("missing_failure_arm.py")
    assert run.returncode == 1, run.stdout + run.stderr
    assert (
        'Match statement has unhandled case for values of type "Failure[UnusableResponse]"  '
        "[exhaustive-match]"
    ) in run.stdout
    assert "Found 1 error in 1 file" in run.stdout


def test_match_with_both_arms_passes_mypy() -> None:
    run = _mypy("complete_match.py")
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.stdout.startswith("Success: no issues found")


def test_match_on_the_answer_without_one_kind_is_rejected_as_non_exhaustive() -> None:
    # The answer is a sealed union: a decision made per kind that forgets one fails the check.
    run = _mypy("missing_answer_arm.py")
    assert run.returncode == 1, run.stdout + run.stderr
    # Only the kind left out is named ("Scores", with any kind added since after it).
    assert 'Match statement has unhandled case for values of type "Scores' in run.stdout


def test_a_response_built_with_a_flat_answer_keyword_is_rejected() -> None:
    # The answer is built as `answer=` of its kind; the stored flat keys are no keywords.
    run = _mypy("flat_answer_keyword.py")
    assert run.returncode == 1, run.stdout + run.stderr
    assert 'Unexpected keyword argument "text" for "GenerationResponse"' in run.stdout
    assert "Found 1 error in 1 file" in run.stdout
