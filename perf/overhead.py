"""Fixed overhead: wall time of `assay --help`, of a whole 10-request `assay run` (report.html
included) and of a whole 1-second `assay run`.

Both are timed end to end from this process (interpreter start, imports, load processes,
readiness check, report writing, exit), the best of several tries so a busy machine's stalls
do not count; the median is kept next to it.
"""

from __future__ import annotations

import statistics
from typing import Any

from perf.harness import assay_command, run_assay, running_mock, wall_seconds

HELP_TRIES = 5
RUN_TRIES = 3
RUN_SECONDS = 1.0
SHORT_RUN_TRIES = 5
SHORT_RUN_REQUESTS = 10


def _one_second_arguments(url: str, processes: int | None) -> list[str]:
    arguments = [
        "--target",
        url,
        "--endpoint",
        "chat",
        "--output-tokens",
        "16",
        "--prompt-tokens",
        "32",
        "--max-seconds",
        f"{RUN_SECONDS:g}",
    ]
    return arguments if processes is None else [*arguments, "--processes", str(processes)]


def _timed_runs(url: str, processes: int | None) -> dict[str, Any]:
    arguments = _one_second_arguments(url, processes)
    walls = []
    used = 0
    for _ in range(RUN_TRIES):
        run = run_assay(arguments, timeout_s=120)
        walls.append(run.wall_s)
        used = run.processes
    return {
        "command": "assay run " + " ".join(arguments).replace(url, "URL"),
        "processes": used,
        "best_s": round(min(walls), 3),
        "median_s": round(statistics.median(walls), 3),
        "overhead_s": round(min(walls) - RUN_SECONDS, 3),
    }


def _short_runs(url: str) -> dict[str, Any]:
    """A 10-request run with default processes, end to end, its report.html written."""
    arguments = [
        "--target",
        url,
        "--endpoint",
        "chat",
        "--output-tokens",
        "16",
        "--prompt-tokens",
        "32",
        "--max-requests",
        str(SHORT_RUN_REQUESTS),
    ]
    walls = []
    used = 0
    for _ in range(SHORT_RUN_TRIES):
        run = run_assay(arguments, timeout_s=120, expect_files=("report.html",))
        walls.append(run.wall_s)
        used = run.processes
    return {
        "command": "assay run " + " ".join(arguments).replace(url, "URL"),
        "processes": used,
        "best_s": round(min(walls), 3),
        "median_s": round(statistics.median(walls), 3),
    }


def measure() -> dict[str, Any]:
    """`assay --help` best of 5; a 10-request run best of 5; a 1-second run (default
    processes, and 1) best of 3."""
    helps = [wall_seconds([*assay_command(), "--help"], timeout_s=60) for _ in range(HELP_TRIES)]
    with running_mock(output_tokens=16, workers=1) as mock:
        short_run = _short_runs(mock.url)
        run_default = _timed_runs(mock.url, None)
        run_p1 = _timed_runs(mock.url, 1)
    return {
        "help_best_s": round(min(helps), 3),
        "help_median_s": round(statistics.median(helps), 3),
        "ten_request_run": short_run,
        "one_second_run": run_default,
        "one_second_run_p1": run_p1,
    }
