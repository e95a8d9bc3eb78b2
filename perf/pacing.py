"""Pacing: does `--profile constant --rate R` dispatch R requests/s, and how late?

Achieved rate is dispatched / step duration from report.json; dispatch lag (actual send minus
targeted start) comes from the report's metrics, so it is what any user of assay would see.
Two more views explain the lag: the collector pauses of every process of the run during the
step (logged by `perf/gc_watch`), and the lag's p99 per second of the step from records.jsonl,
because on a shared machine one busy second of someone else's work can set a whole run's p99.
"""

from __future__ import annotations

import os
import statistics
import tempfile
from pathlib import Path
from typing import Any

import orjson

from perf.gc_pauses import GC_WATCH_DIR, LOG_VARIABLE, summarise
from perf.harness import run_assay, running_mock

RATES = (200, 500, 1000)
OUTPUT_TOKENS = 16
PROMPT_TOKENS = 32
NS_PER_S = 1_000_000_000


def paced_run(url: str, rate: int, seconds: float) -> dict[str, Any]:
    """One constant-rate run of `seconds` against `url`; its achieved rate and dispatch lag."""
    arguments = [
        "--profile",
        "constant",
        "--rate",
        str(rate),
        "--target",
        url,
        "--endpoint",
        "chat",
        "--output-tokens",
        str(OUTPUT_TOKENS),
        "--prompt-tokens",
        str(PROMPT_TOKENS),
        "--max-seconds",
        f"{seconds:g}",
    ]
    with tempfile.TemporaryDirectory(prefix="assay-pacing-") as work:
        gc_log = Path(work) / "gc"
        path = os.pathsep.join(filter(None, [str(GC_WATCH_DIR), os.environ.get("PYTHONPATH")]))
        run = run_assay(
            arguments,
            timeout_s=seconds + 120,
            keep_dir=Path(work),
            env={"PYTHONPATH": path, LOG_VARIABLE: str(gc_log)},
        )
        metrics = run.step["metrics"]
        pauses = summarise(gc_log, metrics["start_ns"], metrics["end_ns"])
        per_second = lag_p99_per_second(Path(work) / "run" / "records.jsonl")
    dispatched = metrics["outcomes"]["dispatched"]
    duration = metrics["throughput"]["duration_s"]
    achieved = dispatched / duration
    lag = metrics["latency"]["dispatch_lag_ms"]
    return {
        "command": "assay run " + " ".join(arguments).replace(url, "URL"),
        "processes": run.processes,
        "exit_code": run.returncode,
        "requested_rate": rate,
        "achieved_rate": round(achieved, 2),
        "achieved_over_requested": round(achieved / rate, 4),
        "rate_error": round(abs(achieved / rate - 1), 4),
        "dispatched": dispatched,
        "completed": metrics["outcomes"]["completed"],
        "step_duration_s": round(duration, 3),
        **{f"dispatch_lag_{name}_ms": round(lag[name], 3) for name in DISTRIBUTION},
        "dispatch_lag_p99_ms_per_second": per_second,
        "dispatch_lag_p99_ms_median_second": (
            round(statistics.median(per_second), 3) if per_second else None
        ),
        "gc_pauses_during_step": pauses,
        "gc_pauses_over_1_ms": sum(pauses[f"generation_{g}"]["over_1_ms"] for g in (0, 1, 2)),
        "usable_requests_per_s": round(metrics["throughput"]["usable_requests_per_s"], 1),
        # The whole assay process tree, start-up (imports, ~0.5 s a process) included.
        "client_cpu_s": round(run.cpu_s, 3),
    }


DISTRIBUTION = ("p50", "p90", "p95", "p99", "p999", "max")


def lag_p99_per_second(records: Path) -> list[float]:
    """The nearest-rank p99 of dispatch lag (ms) of the requests targeted in each whole second
    of the step, in order (a last, partial second is left out)."""
    by_second: dict[int, list[int]] = {}
    first: int | None = None
    lines = [orjson.loads(raw) for raw in records.read_bytes().splitlines() if raw.strip()]
    lines.sort(key=lambda line: line["targeted_start_ns"])
    for line in lines:
        target = line["targeted_start_ns"]
        first = target if first is None else first
        second = (target - first) // NS_PER_S
        by_second.setdefault(second, []).append(line["dispatched_ns"] - target)
    whole = sorted(by_second)[:-1]
    figures = []
    for second in whole:
        lags = sorted(by_second[second])
        figures.append(round(lags[max(0, -(-99 * len(lags) // 100) - 1)] / 1e6, 3))
    return figures


def measure(seconds: float = 10.0) -> dict[str, Any]:
    """Constant 200, 500 and 1000 req/s for `seconds` each against one zero-latency mock."""
    with running_mock(output_tokens=OUTPUT_TOKENS, workers=1) as mock:
        return {f"rate_{rate}": paced_run(mock.url, rate, seconds) for rate in RATES}
