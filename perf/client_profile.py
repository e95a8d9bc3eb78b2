"""Where the client's time goes: `assay run --processes 1` under cProfile, summarised.

With one process the whole client (CLI, plan, load loop, report) runs in the profiled
interpreter. The summary keeps the functions with the most own time, own time by area
(assay package, aiohttp, asyncio, C builtins, ...) and the cumulative time of the run's phases,
so the results say what limits the ceiling and what the fixed overhead is made of.

    python -m perf.client_profile STATS_FILE -- ASSAY_RUN_ARGUMENTS...
"""

from __future__ import annotations

import cProfile
import json
import pstats
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from perf.harness import running_mock

TOP = 15
TOP_AREAS = 15
# Phases of a run, by function name, whose cumulative time is reported. Plain functions only:
# cProfile ends a coroutine's call at its first await, so its cumulative time means little.
PHASES = (
    "_find_and_load",
    "check_ready",
    "source_of",
    "run_benchmark",
    "_merge_shards",
    "build_report",
    "write_report",
    "render_summary",
)


def area_of(filename: str) -> str:
    """A coarse owner for a profiled function's file.

    >>> area_of("~")
    'C builtins'
    >>> area_of("/x/site-packages/aiohttp/client.py")
    'aiohttp'
    >>> area_of("/x/src/assay/handlers/sse.py")
    'assay.handlers'
    >>> area_of("/usr/lib/python3.11/asyncio/events.py")
    'stdlib asyncio'
    """
    if filename == "~" or filename.startswith("<"):
        return "C builtins" if filename == "~" else "frozen importlib"
    parts = Path(filename).parts
    if "site-packages" in parts:
        return parts[parts.index("site-packages") + 1].removesuffix(".py")
    if "assay" in parts:
        index = len(parts) - 1 - parts[::-1].index("assay")
        rest = parts[index + 1 :]
        return "assay" if len(rest) <= 1 else f"assay.{rest[0]}"
    for index, part in enumerate(parts):
        if part.startswith("python3"):
            tail = parts[index + 1 : index + 2]
            return f"stdlib {tail[0].removesuffix('.py')}" if tail else "stdlib"
    return "other"


def summarise(stats_file: Path) -> dict[str, Any]:
    """Top functions by own time, own time per area, cumulative time per phase."""
    stats = pstats.Stats(str(stats_file))
    entries: dict[Any, Any] = stats.stats  # type: ignore[attr-defined]  # untyped pstats field
    total = sum(entry[2] for entry in entries.values())
    rows = sorted(entries.items(), key=lambda item: item[1][2], reverse=True)
    top = [
        {
            "function": f"{area_of(file)}:{Path(file).name}:{line}({name})",
            "calls": entry[1],
            "own_s": round(entry[2], 3),
            "cumulative_s": round(entry[3], 3),
        }
        for (file, line, name), entry in rows[:TOP]
    ]
    areas: dict[str, float] = {}
    for (file, _, _), entry in entries.items():
        areas[area_of(file)] = areas.get(area_of(file), 0.0) + entry[2]
    phases: dict[str, float] = {}
    for (_, _, name), entry in entries.items():
        if name in PHASES:
            phases[name] = max(phases.get(name, 0.0), entry[3])
    return {
        "profiled_own_s": round(total, 3),
        "top_own_time": top,
        "own_time_by_area": {
            area: round(seconds, 3)
            for area, seconds in sorted(areas.items(), key=lambda item: -item[1])[:TOP_AREAS]
        },
        "phase_cumulative_s": {name: round(phases[name], 3) for name in PHASES if name in phases},
    }


def measure(seconds: float = 10.0) -> dict[str, Any]:
    """Profile a `--processes 1` throughput run of `seconds` against a zero-latency mock."""
    with tempfile.TemporaryDirectory(prefix="assay-profile-") as work, running_mock() as mock:
        stats_file = Path(work) / "run.prof"
        arguments = [
            "--profile",
            "throughput",
            "--concurrency",
            "64",
            "--target",
            mock.url,
            "--endpoint",
            "chat",
            "--output-tokens",
            "16",
            "--prompt-tokens",
            "32",
            "--max-seconds",
            f"{seconds:g}",
            "--processes",
            "1",
            "--output-dir",
            str(Path(work) / "run"),
        ]
        command = [sys.executable, "-m", "perf.client_profile", str(stats_file), "--"]
        subprocess.run([*command, *arguments], capture_output=True, timeout=seconds + 180)
        if not stats_file.exists():
            raise RuntimeError("the profiled run wrote no statistics")
        summary = summarise(stats_file)
        report = json.loads((Path(work) / "run" / "report.json").read_text())
    completed = int(report["totals"]["outcomes"]["completed"])
    summary["completed"] = completed
    summary["own_us_per_completed_by_area"] = {
        area: round(seconds / max(completed, 1) * 1e6, 1)
        for area, seconds in summary["own_time_by_area"].items()
    }
    summary["command"] = "assay run " + " ".join(arguments[:-2]).replace(mock.url, "URL")
    return summary


def _profile_cli(stats_file: str, arguments: list[str]) -> None:
    from assay.testing.bench import main

    sys.argv = ["assay", "run", *arguments]
    profiler = cProfile.Profile()
    try:
        profiler.runcall(main)
    except SystemExit:
        pass
    finally:
        profiler.dump_stats(stats_file)


if __name__ == "__main__":
    _profile_cli(sys.argv[1], sys.argv[3:])
