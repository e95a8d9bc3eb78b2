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


def _run_arguments(url: str, *bound: str) -> list[str]:
    """A streamed chat run against `url` (16 output tokens, 32-token prompts), bounded by
    `bound` (`--max-seconds S` or `--max-requests N`, and any more flags)."""
    return [
        "--target",
        url,
        "--endpoint",
        "chat",
        "--output-tokens",
        "16",
        "--prompt-tokens",
        "32",
        *bound,
    ]


def _timed(arguments: list[str], url: str, tries: int, **expect: Any) -> dict[str, Any]:
    """`assay run ARGUMENTS` `tries` times: its command, processes, best and median wall, and
    the best and median CPU of its processes (user + system: on a busy machine the wall is
    stretched by others' work, the CPU much less)."""
    walls = []
    cpus = []
    used = 0
    for _ in range(tries):
        run = run_assay(arguments, timeout_s=120, **expect)
        walls.append(run.wall_s)
        cpus.append(run.cpu_s)
        used = run.processes
    return {
        "command": "assay run " + " ".join(arguments).replace(url, "URL"),
        "processes": used,
        "best_s": round(min(walls), 3),
        "median_s": round(statistics.median(walls), 3),
        "cpu_best_s": round(min(cpus), 3),
        "cpu_median_s": round(statistics.median(cpus), 3),
    }


def _timed_runs(url: str, processes: int | None) -> dict[str, Any]:
    """A 1-second run, best of 3, with its overhead over the second."""
    more = [] if processes is None else ["--processes", str(processes)]
    arguments = _run_arguments(url, "--max-seconds", f"{RUN_SECONDS:g}", *more)
    timed = _timed(arguments, url, RUN_TRIES)
    return {**timed, "overhead_s": round(timed["best_s"] - RUN_SECONDS, 3)}


def _short_runs(url: str) -> dict[str, Any]:
    """A 10-request run with default processes, end to end, its report.html written."""
    arguments = _run_arguments(url, "--max-requests", str(SHORT_RUN_REQUESTS))
    return _timed(arguments, url, SHORT_RUN_TRIES, expect_files=("report.html",))


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
