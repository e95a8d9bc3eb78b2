"""Per-unit costs: the chunk, chain, aggregation, request, dispatch and after-verdict
micro-benchmarks, each in its own process.

Each one prints a JSON object; running them as subprocesses keeps their heaps and imports from
colouring one another and bounds each one in time.
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

MODULES = {
    "chunk": "perf.chunk_cost",
    "chain": "perf.chain_cost",
    "aggregation": "perf.aggregation_cost",
    "request": "perf.request_costs",
    "dispatch": "perf.dispatch_cost",
    "after": "perf.after_cost",
}
_TIMEOUT_S = 180.0


def run_module(module: str) -> dict[str, Any]:
    """`python -m MODULE` with this interpreter; its printed JSON object."""
    completed = subprocess.run(
        [sys.executable, "-m", module],
        capture_output=True,
        timeout=_TIMEOUT_S,
        check=False,
    )
    if completed.returncode != 0:
        raise RuntimeError(f"{module} exited {completed.returncode}: {completed.stderr[-800:]!r}")
    figures: dict[str, Any] = json.loads(completed.stdout)
    return figures


def measure() -> dict[str, Any]:
    """Every micro-benchmark's figures, keyed by what it measures."""
    return {name: run_module(module) for name, module in MODULES.items()}
