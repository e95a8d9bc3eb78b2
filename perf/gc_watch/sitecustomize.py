"""Records every cyclic-collector pause of a process the pacing part starts (measurement only).

The pacing part puts this directory first on `PYTHONPATH` and names a file prefix in
`ASSAY_PERF_GC_LOG`; every Python process of the run (the CLI and its load processes) then
appends one line per collection to `PREFIX.PID`: generation, pause in ns, objects collected and
the pause's start on the monotonic clock (`perf_counter_ns`, the clock assay's records use), so
pauses can be matched to a step's time span. It shadows any other `sitecustomize` on the path,
which is why only the suite's own runs use it.
"""

from __future__ import annotations

import gc
import os
import time

_PREFIX = os.environ.get("ASSAY_PERF_GC_LOG")

if _PREFIX:
    _log = open(f"{_PREFIX}.{os.getpid()}", "w", buffering=1)  # noqa: SIM115  # the process's life
    _started = [0]

    def _pause(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            _started[0] = time.perf_counter_ns()
            return
        paused = time.perf_counter_ns() - _started[0]
        _log.write(f"{info['generation']} {paused} {info['collected']} {_started[0]}\n")

    gc.callbacks.append(_pause)
