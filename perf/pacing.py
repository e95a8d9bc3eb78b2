"""Pacing: does `--profile constant --rate R` dispatch R requests/s, and how late?

Achieved rate is dispatched / step duration from report.json; dispatch lag (actual send minus
targeted start) comes from the report's metrics, so it is what any user of assay would see.
"""

from __future__ import annotations

from typing import Any

from perf.harness import run_assay, running_mock

RATES = (500, 1000)
OUTPUT_TOKENS = 16
PROMPT_TOKENS = 32


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
    run = run_assay(arguments, timeout_s=seconds + 120)
    metrics = run.step["metrics"]
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
        "dispatch_lag_p50_ms": round(lag["p50"], 3),
        "dispatch_lag_p99_ms": round(lag["p99"], 3),
        "dispatch_lag_max_ms": round(lag["max"], 3),
        "usable_requests_per_s": round(metrics["throughput"]["usable_requests_per_s"], 1),
    }


def measure(seconds: float = 10.0) -> dict[str, Any]:
    """Constant 500 and 1000 req/s for `seconds` each against one zero-latency mock."""
    with running_mock(output_tokens=OUTPUT_TOKENS, workers=1) as mock:
        return {f"rate_{rate}": paced_run(mock.url, rate, seconds) for rate in RATES}
