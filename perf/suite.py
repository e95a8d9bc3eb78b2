"""assay's own performance suite: client ceiling, pacing, per-unit costs, memory, overhead.

    python -m perf.suite                 # every part (9 to 15 min on 2 cores)
    # `instructions` needs valgrind; `peers` needs vLLM (scripts/install-servers vllm model)
    python -m perf.suite --only pacing   # one part, merged into the existing results
    python -m perf.suite --write-doc     # regenerate docs/performance.md from the results

Each part drives the real CLI against `assay mock` on loopback and keeps only figures it
measured. Results go to perf/results/latest.json (and a dated copy in
perf/results/history/); the markdown table with met / missed per target is printed.
A part that fails is recorded with its error and the others still run.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
import traceback
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psutil  # type: ignore[import-untyped]  # no stubs installed; benchmarks only

from perf import (
    ceiling,
    client_profile,
    instructions,
    memory,
    overhead,
    pacing,
    peers,
    unit_costs,
)
from perf.perf_doc import DOC_PATH, write_doc
from perf.targets import evaluate, markdown_table

RESULTS_DIR = Path(__file__).resolve().parent / "results"
LATEST = RESULTS_DIR / "latest.json"
HISTORY = RESULTS_DIR / "history"
SCHEMA = "assay.perf/1"
COMMAND = "python -m perf.suite"


def _parts(args: argparse.Namespace) -> dict[str, Callable[[], dict[str, Any]]]:
    return {
        "ceiling": lambda: ceiling.measure(args.seconds),
        "pacing": lambda: pacing.measure(args.seconds),
        "unit_costs": unit_costs.measure,
        "memory": lambda: memory.measure(args.memory_requests),
        "overhead": overhead.measure,
        "profile": lambda: client_profile.measure(args.seconds),
        "instructions": lambda: instructions.measure(requests=1000, base=200),
        "peers": peers.measure,
    }


PART_NAMES = (
    "ceiling",
    "pacing",
    "unit_costs",
    "memory",
    "overhead",
    "profile",
    "instructions",
    "peers",
)


def machine() -> dict[str, Any]:
    """What the figures ran on: cores, memory, CPU model, Python, OS, load at the time."""
    return {
        "logical_cores": os.cpu_count(),
        "physical_cores": psutil.cpu_count(logical=False),
        "memory_gb": round(psutil.virtual_memory().total / 2**30, 1),
        "cpu_model": _cpu_model(),
        "python": f"{platform.python_implementation()} {platform.python_version()}",
        "os": _os_name(),
        "platform": platform.platform(),
    }


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("model name"):
                    return line.partition(":")[2].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _os_name() -> str:
    try:
        return platform.freedesktop_os_release().get("PRETTY_NAME", platform.system())
    except OSError:
        return f"{platform.system()} {platform.release()}"


def run_parts(names: list[str], args: argparse.Namespace, results: dict[str, Any]) -> None:
    """Measure each named part into `results["parts"]`, timing it; a failure is recorded."""
    parts = _parts(args)
    for name in names:
        print(f"== {name}", file=sys.stderr, flush=True)
        load_before = os.getloadavg()[0]
        started = time.perf_counter()
        try:
            figures = parts[name]()
        except Exception as error:  # a failed part is a result too; the others still run
            # The trace names files relative to the repository: results are kept in git.
            trace = traceback.format_exc().replace(f"{Path.cwd()}/", "")
            figures = {"error": f"{type(error).__name__}: {error}", "trace": trace}
        figures["part_seconds"] = round(time.perf_counter() - started, 1)
        figures["load_average_1m_before"] = round(load_before, 2)
        figures["load_average_1m_after"] = round(os.getloadavg()[0], 2)
        figures["measured_at"] = datetime.now(UTC).isoformat(timespec="seconds")
        results["parts"][name] = figures
        print(json.dumps(figures, indent=1)[:4000], file=sys.stderr, flush=True)


def load_latest() -> dict[str, Any]:
    """The committed results, or an empty results object when there are none."""
    if LATEST.exists():
        results: dict[str, Any] = json.loads(LATEST.read_text())
        if results.get("schema") == SCHEMA:
            return results
    return {"schema": SCHEMA, "parts": {}}


def save(results: dict[str, Any], measured: list[str]) -> Path:
    """Write latest.json and a dated copy in history/; returns the copy's path.

    The copy holds only the parts measured now, so a `--only` run does not repeat older
    figures in the history under a new date.
    """
    results["targets"] = evaluate(results)
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    LATEST.write_text(json.dumps(results, indent=2) + "\n")
    fresh = {**results, "parts": {name: results["parts"][name] for name in measured}}
    fresh["targets"] = evaluate(fresh)
    HISTORY.mkdir(exist_ok=True)
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    partial = "" if set(measured) == set(PART_NAMES) else "-only-" + "-".join(measured)
    copy = HISTORY / f"{stamp}{partial}.json"
    copy.write_text(json.dumps(fresh, indent=2) + "\n")
    return copy


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="assay's own performance suite.")
    parser.add_argument("--only", choices=PART_NAMES, action="append", help="run only this part")
    parser.add_argument("--write-doc", action="store_true", help="regenerate the doc, run nothing")
    parser.add_argument("--seconds", type=float, default=10.0, help="per timed run [10]")
    parser.add_argument(
        "--memory-requests",
        type=int,
        default=memory.LARGE_REQUESTS,
        help="requests of the large memory run; the small one has a tenth [200000]",
    )
    args = parser.parse_args(argv)
    if args.write_doc:
        write_doc(load_latest(), DOC_PATH)
        print(f"wrote {DOC_PATH}", file=sys.stderr)
        return 0
    names = list(args.only) if args.only else list(PART_NAMES)
    results = load_latest() if args.only else {"schema": SCHEMA, "parts": {}}
    results["command"] = COMMAND
    results["machine"] = machine()
    results["started_at"] = datetime.now(UTC).isoformat(timespec="seconds")
    run_parts(names, args, results)
    results["finished_at"] = datetime.now(UTC).isoformat(timespec="seconds")
    results["options"] = {"seconds": args.seconds, "memory_requests": args.memory_requests}
    copy = save(results, names)
    print(markdown_table(results))
    print(f"\nresults: {LATEST} (copy: {copy.name})", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
