"""Memory: peak RSS of `assay run` for many requests against ten times fewer.

Records stream to disk, and the aggregation keeps bounded sketches, so the peak must not grow
with the request count. The RSS is summed over the run's whole process tree (the CLI parent
and its load processes; the mock is a separate process and not counted), sampled every 100 ms.
"""

from __future__ import annotations

from typing import Any

from perf.harness import SAMPLE_INTERVAL_S, run_assay, running_mock

LARGE_REQUESTS = 200_000
OUTPUT_TOKENS = 16
CONCURRENCY = 64
MB = 1_000_000


def sized_run(url: str, requests: int) -> dict[str, Any]:
    """A throughput run of exactly `requests` requests; its peak tree RSS and record volume."""
    arguments = [
        "--profile",
        "throughput",
        "--concurrency",
        str(CONCURRENCY),
        "--target",
        url,
        "--endpoint",
        "chat",
        "--output-tokens",
        str(OUTPUT_TOKENS),
        "--prompt-tokens",
        "32",
        "--max-requests",
        str(requests),
    ]
    # Bounded: generous for a loaded 2-core machine (~200 req/s), yet a hung run still ends.
    run = run_assay(arguments, timeout_s=120 + requests / 200, sample_rss=True)
    outcomes = run.step["metrics"]["outcomes"]
    return {
        "command": "assay run " + " ".join(arguments).replace(url, "URL"),
        "processes": run.processes,
        "exit_code": run.returncode,
        "dispatched": outcomes["dispatched"],
        "completed": outcomes["completed"],
        "peak_rss_mb": round(run.peak_rss_bytes / MB, 1),
        "processes_at_peak": run.peak_rss_processes,
        "peak_rss_mb_by_process": [
            {"process": role, "rss_mb": round(rss / MB, 1)} for role, rss in run.peak_rss_breakdown
        ],
        "rss_samples": run.rss_samples,
        "records_jsonl_mb": round(run.records_bytes / MB, 1),
        "wall_s": round(run.wall_s, 2),
        "usable_requests_per_s": round(
            run.step["metrics"]["throughput"]["usable_requests_per_s"], 1
        ),
    }


def measure(large: int = LARGE_REQUESTS) -> dict[str, Any]:
    """Peak RSS for `large // 10` and `large` requests, and how much the larger run grew."""
    small = max(1, large // 10)
    with running_mock(output_tokens=OUTPUT_TOKENS, workers=1) as mock:
        small_run = sized_run(mock.url, small)
        large_run = sized_run(mock.url, large)
    return {
        "sample_interval_s": SAMPLE_INTERVAL_S,
        "small": small_run,
        "large": large_run,
        "peak_rss_mb": max(small_run["peak_rss_mb"], large_run["peak_rss_mb"]),
        "growth_ratio": round(large_run["peak_rss_mb"] / small_run["peak_rss_mb"], 3),
    }
