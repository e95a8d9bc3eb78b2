"""Instructions per request of assay's own work: `perf.free_transport`'s run under callgrind.

`perf.free_transport` times assay's whole run with an exchange that sends nothing; on a shared
machine its CPU time moves by more than a change to the request path does. This counts what that
run asks of the processor instead: the same `assay run --processes 1` (16-token streamed chat,
concurrency 64, the mock's captured answer fed for free) under `valgrind --tool=callgrind`, once
with `--base` requests and once with `--requests` more, so start-up, the report and shut-down
cancel out. `--keep DIR` keeps both callgrind files (for `callgrind_annotate`).

    python -m perf.free_instructions [--requests 2000] [--base 200] [--keep DIR]  # valgrind
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from perf.ceiling import ceiling_arguments
from perf.free_transport import _ANSWER_ENV, captured_answer
from perf.harness import OUTPUT_TOKENS, running_mock

_TOTAL = re.compile(rb"^(?:summary|totals): (\d+)", re.MULTILINE)
_TIMEOUT_S = 1800.0


def count(url: str, answer: bytes, requests: int, out: Path) -> int:
    """Instructions callgrind counted for a free-transport run of `requests` requests."""
    arguments = [
        *ceiling_arguments(url, 3600, processes=1),
        "--max-requests",
        str(requests),
        # Scrapes come once a second of the run's wall time, which callgrind stretches by a
        # factor the machine's load moves: counted, they would move the figure.
        "--no-server-metrics",
    ]
    with tempfile.TemporaryDirectory(prefix="assay-perf-free-ir-") as folder:
        command = [
            "valgrind",
            "--tool=callgrind",
            f"--callgrind-out-file={out}",
            sys.executable,
            "-c",
            "from perf.free_instructions import _launch; _launch()",
            "run",
            *arguments,
            "--output-dir",
            str(Path(folder) / "run"),
        ]
        env = {**os.environ, _ANSWER_ENV: answer.hex(), "PYTHONHASHSEED": "0"}
        completed = subprocess.run(
            command, capture_output=True, timeout=_TIMEOUT_S, check=False, env=env
        )
    if completed.returncode != 0:
        raise RuntimeError(f"run exited {completed.returncode}: {completed.stderr[-800:]!r}")
    found = _TOTAL.search(out.read_bytes())
    if found is None:
        raise RuntimeError("no instruction total in callgrind's output")
    return int(found.group(1))


def _launch() -> None:
    """The measured process: `perf.free_transport`'s, with every request built on the loop.

    Under callgrind a text request takes some fifty times as long to build, past the 0.5 ms
    after which a step moves its builds to threads (`assay.load.ahead`); whether and when they
    move would then depend on the machine's load, and the threads' handoffs would be counted.
    A run outside callgrind builds these requests on the loop, so the measured one does too.
    """
    from assay.testing.bench import RequestBuilds

    # The thresholds are read by the module of the builds at each build.
    ahead = sys.modules[RequestBuilds.__module__]
    for threshold in ("SLOW_BUILD_NS", "STALL_BUILD_NS"):
        setattr(ahead, threshold, 1 << 62)
    from perf.free_transport import _launch as launch_free

    launch_free()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m perf.free_instructions")
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--base", type=int, default=200)
    parser.add_argument("--keep", type=Path, default=None)
    options = parser.parse_args(argv)
    if shutil.which("valgrind") is None:
        raise SystemExit("error: valgrind is not installed (Debian: apt-get install valgrind)")
    with tempfile.TemporaryDirectory() as scratch:
        folder = options.keep or Path(scratch)
        folder.mkdir(parents=True, exist_ok=True)
        with running_mock(output_tokens=OUTPUT_TOKENS, workers=1) as mock:
            answer = captured_answer(mock.url)
            few = count(mock.url, answer, options.base, folder / "few.out")
            total = options.base + options.requests
            many = count(mock.url, answer, total, folder / "many.out")
    figures = {
        "base_requests": options.base,
        "requests": options.requests,
        "instructions_base": few,
        "instructions_many": many,
        "instructions_per_request": round((many - few) / options.requests),
    }
    print(json.dumps(figures, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
