"""Running the installed `assay` command as a subprocess and reading the files a run wrote.

Every run gets its own session (process group), so a run that overstays its deadline is ended
with everything it started: the embedded mock and the load processes.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import orjson

from assay.reports import Report

ASSAY: Final = Path(sys.executable).parent / "assay"

# An instant embedded mock and small requests: a run's time is spent on assay, not on waiting.
FAST: Final = (
    "--mock-ttft-ms",
    "0",
    "--mock-itl-ms",
    "0",
    "--output-tokens",
    "16",
    "--prompt-tokens",
    "32",
)

RUN_TIMEOUT_S: Final = 90.0


@contextlib.contextmanager
def assay_mock(*flags: str | Path) -> Iterator[str]:
    """`assay mock --port 0 FLAGS` in a session of its own: its URL while the block runs."""
    process = subprocess.Popen(
        [str(ASSAY), "mock", "--port", "0", *map(str, flags)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=assay_env(),
        start_new_session=True,
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        assert " at http://" in line, line + (process.stderr.read() if process.stderr else "")
        yield line.split(" at ", 1)[1].split()[0]
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        process.communicate(timeout=30)  # reads the pipes to their end and closes them


@dataclass(frozen=True, slots=True)
class CliResult:
    """What one `assay` invocation printed and how it exited."""

    exit_code: int
    stdout: str
    stderr: str


def assay_env() -> dict[str, str]:
    """This environment with a wide, plain console, so no line of the output is wrapped."""
    return {**os.environ, "COLUMNS": "200", "NO_COLOR": "1", "TERM": "dumb"}


def run_assay(
    *args: str | Path,
    timeout_s: float = RUN_TIMEOUT_S,
    cwd: Path | None = None,
    python_path: Path | None = None,
) -> CliResult:
    """Run `assay ARGS...` (in `cwd` when given) to its end; a run still going after
    `timeout_s` is killed and fails. `python_path` is put on PYTHONPATH, so
    `--validator module:name` can load a test's module."""
    process = start_assay(*args, cwd=cwd, python_path=python_path)
    return finish_assay(process, args, timeout_s)


def start_assay(
    *args: str | Path,
    cwd: Path | None = None,
    python_path: Path | None = None,
    without_env: tuple[str, ...] = (),
) -> subprocess.Popen[str]:
    """Start `assay ARGS...` in its own session, its output piped; see `finish_assay`.
    `without_env` names variables of the test's environment the command must not see."""
    env = assay_env()
    for name in without_env:
        env.pop(name, None)
    if python_path is not None:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, (str(python_path), env.get("PYTHONPATH"))))
    return subprocess.Popen(
        [str(ASSAY), *map(str, args)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        start_new_session=True,
        cwd=cwd,
    )


def finish_assay(
    process: subprocess.Popen[str], args: tuple[str | Path, ...], timeout_s: float = RUN_TIMEOUT_S
) -> CliResult:
    """Wait for a started `assay` to end; one still going after `timeout_s` is killed."""
    try:
        stdout, stderr = process.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        stdout, stderr = process.communicate()
        raise AssertionError(
            f"assay {' '.join(map(str, args))} ran past {timeout_s} s\n{stdout}\n{stderr}"
        ) from None
    return CliResult(process.returncode, stdout, stderr)


def run_fast(output_dir: Path, *args: str | Path) -> CliResult:
    """`assay run` against an instant embedded mock, writing into `output_dir`.

    With `--data` the prompt file gives the prompts, so no `--prompt-tokens` is added, and with
    `--trace` its rows give both lengths, so no `--output-tokens` either (assay refuses a flag it
    would ignore).
    """
    fast: tuple[str, ...] = FAST
    if "--trace" in args:
        fast = FAST[: FAST.index("--output-tokens")]
    elif "--data" in args:
        fast = FAST[: FAST.index("--prompt-tokens")]
    return run_assay("run", *fast, "--output-dir", output_dir, *args)


def read_report(run_dir: Path) -> Report:
    """The report.json of a run directory, validated against the report model."""
    return Report.model_validate_json((run_dir / "report.json").read_bytes())


def read_record_lines(run_dir: Path) -> list[dict[str, Any]]:
    """Every line of a run's records.jsonl, parsed."""
    raw = (run_dir / "records.jsonl").read_bytes()
    return [orjson.loads(line) for line in raw.splitlines() if line.strip()]


def assert_every_request_accounted(run_dir: Path) -> Report:
    """Each step: dispatched == completed + errored + cancelled, and exactly that many lines.

    Returns the report for further checks.
    """
    report = read_report(run_dir)
    lines = read_record_lines(run_dir)
    lines_per_step = Counter(int(line["step"]) for line in lines)
    for step in report.steps:
        outcomes = step.metrics.outcomes
        assert outcomes.dispatched == outcomes.completed + outcomes.errored + outcomes.cancelled, (
            f"step {step.index}: {outcomes}"
        )
        assert lines_per_step[step.index] == outcomes.dispatched, (
            f"step {step.index}: {lines_per_step[step.index]} lines for {outcomes}"
        )
    assert len(lines) == sum(step.metrics.outcomes.dispatched for step in report.steps)
    assert set(lines_per_step) <= {step.index for step in report.steps}
    totals = report.totals.outcomes
    statuses = Counter(str(line["status"]) for line in lines)
    assert statuses["completed"] == totals.completed
    assert statuses["errored"] == totals.errored
    assert statuses["cancelled"] == totals.cancelled
    return report
