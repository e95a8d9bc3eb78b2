"""The collector pauses `perf/gc_watch` logged for one run, summed per generation over a span."""

from __future__ import annotations

from pathlib import Path
from typing import Any

GC_WATCH_DIR = Path(__file__).resolve().parent / "gc_watch"
LOG_VARIABLE = "ASSAY_PERF_GC_LOG"


def summarise(prefix: Path, start_ns: int, end_ns: int) -> dict[str, Any]:
    """Per generation, the pauses that began in [start_ns, end_ns]: count, total, max, > 1 ms.

    >>> import tempfile
    >>> log = Path(tempfile.mkdtemp()) / "gc"
    >>> _ = Path(f"{log}.7").write_text("0 500000 3 10\\n2 40000000 9 20\\n0 100 0 99\\n")
    >>> summarise(log, 0, 50)["generation_2"]
    {'count': 1, 'total_ms': 40.0, 'max_ms': 40.0, 'over_1_ms': 1}
    """
    pauses: dict[int, list[int]] = {}
    processes = 0
    for path in sorted(prefix.parent.glob(f"{prefix.name}.*")):
        processes += 1
        for line in path.read_text().splitlines():
            fields = line.split()
            if len(fields) != 4:
                continue  # the last line of a process killed mid-write
            generation, paused, _, started = map(int, fields)
            if start_ns <= started <= end_ns:
                pauses.setdefault(generation, []).append(paused)
    summary: dict[str, Any] = {"processes_logged": processes}
    for generation in (0, 1, 2):
        values = pauses.get(generation, [])
        summary[f"generation_{generation}"] = {
            "count": len(values),
            "total_ms": round(sum(values) / 1e6, 3),
            "max_ms": round(max(values, default=0) / 1e6, 3),
            "over_1_ms": sum(1 for value in values if value > 1_000_000),
        }
    return summary
