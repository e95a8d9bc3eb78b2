"""Processes the performance suite drives: a mock server, `assay` runs, and RSS sampling.

Everything runs as a real subprocess on loopback, so each figure is what a user of the CLI gets,
start-up and shutdown included. Every wait here is bounded; a run that overstays is killed.
"""

from __future__ import annotations

import asyncio
import json
import os
import resource
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Coroutine, Iterator, Sequence
from contextlib import closing, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import psutil  # type: ignore[import-untyped]  # no stubs installed; benchmarks only

_READY_TIMEOUT_S = 30.0
_STOP_TIMEOUT_S = 10.0
SAMPLE_INTERVAL_S = 0.1
# The load every loop of the ceiling measures: 64 concurrent streamed chats, 32 prompt tokens and
# 16 output tokens each.
CONCURRENCY = 64
OUTPUT_TOKENS = 16
PROMPT_TOKENS = 32

T = TypeVar("T")


def run_on_fast_loop(main: Coroutine[Any, Any, T]) -> T:
    """Run `main` on uvloop when installed, as assay's load processes do."""
    try:
        import uvloop
    except ImportError:
        return asyncio.run(main)
    return uvloop.run(main)


def assay_command() -> list[str]:
    """The `assay` console script beside this interpreter, or the same entry point through it."""
    script = Path(sys.executable).with_name("assay")
    if script.exists():
        return [str(script)]
    return [sys.executable, "-c", "from assay.cli.app import main; main()"]


def free_port() -> int:
    """A loopback port nothing listens on right now."""
    with closing(socket.socket(socket.AF_INET, socket.SOCK_STREAM)) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@dataclass(frozen=True, slots=True)
class MockProcess:
    """A running `assay mock`: its URL and process, for CPU figures."""

    url: str
    process: psutil.Process

    def cpu_seconds(self) -> float:
        """User + system CPU time the mock has used so far (its children included)."""
        total = 0.0
        for proc in [self.process, *self.process.children(recursive=True)]:
            try:
                times = proc.cpu_times()
            except psutil.NoSuchProcess:
                continue
            total += times.user + times.system
        return total


@contextmanager
def running_mock(output_tokens: int = 16, workers: int = 1) -> Iterator[MockProcess]:
    """`assay mock` (zero latency, `output_tokens` per answer) as a subprocess; stopped on exit."""
    port = free_port()
    command = [
        *assay_command(),
        "mock",
        "--port",
        str(port),
        "--workers",
        str(workers),
        "--output-tokens",
        str(output_tokens),
    ]
    child = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_healthy(url, child)
        yield MockProcess(url, psutil.Process(child.pid))
    finally:
        _stop(child)


def _wait_healthy(url: str, child: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + _READY_TIMEOUT_S
    while time.monotonic() < deadline:
        if child.poll() is not None:
            error = child.stderr.read().decode() if child.stderr else ""
            raise RuntimeError(f"assay mock exited with {child.returncode}: {error.strip()}")
        try:
            with urllib.request.urlopen(f"{url}/health", timeout=1) as answer:
                if answer.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.05)
    raise RuntimeError(f"assay mock at {url} did not answer /health in {_READY_TIMEOUT_S:.0f}s")


def _stop(child: subprocess.Popen[bytes]) -> None:
    if child.poll() is None:
        child.send_signal(signal.SIGINT)
        try:
            child.wait(_STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait(_STOP_TIMEOUT_S)
    if child.stderr is not None:
        child.stderr.close()


class TreeSampler:
    """Samples the summed RSS of a process and all its descendants every `interval` seconds.

    A background thread, so sampling keeps its pace while the caller waits on the process.
    """

    def __init__(self, root: psutil.Process, interval: float = SAMPLE_INTERVAL_S) -> None:
        self._root = root
        self._interval = interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="rss-sampler", daemon=True)
        self.peak_bytes = 0
        self.peak_processes = 0
        self.peak_breakdown: list[tuple[str, int]] = []
        self.samples = 0

    def __enter__(self) -> TreeSampler:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join(5 * self._interval + 1)

    def _loop(self) -> None:
        while not self._stop.is_set():
            self._sample()
            self._stop.wait(self._interval)

    def _sample(self) -> None:
        try:
            tree = [self._root, *self._root.children(recursive=True)]
        except psutil.NoSuchProcess:
            return
        sizes: list[tuple[str, int]] = []
        for proc in tree:
            try:
                sizes.append((_role(proc), proc.memory_info().rss))
            except psutil.NoSuchProcess:
                continue
        total = sum(rss for _, rss in sizes)
        self.samples += 1
        if total > self.peak_bytes:
            self.peak_bytes = total
            self.peak_processes = len(sizes)
            self.peak_breakdown = sizes


def _role(proc: psutil.Process) -> str:
    """What a process of the tree is: the CLI, a spawned load process, or a helper."""
    try:
        command = " ".join(proc.cmdline())
    except psutil.Error:
        return "gone"
    if "resource_tracker" in command:
        return "multiprocessing resource tracker"
    if "assay.engine.load_child" in command or "multiprocessing" in command:
        return "load process"
    if "run" in command:
        return "assay CLI"
    # Never a path of this machine in the results: the program's name and its arguments only.
    program, *arguments = proc.cmdline() or ["?"]
    return " ".join([program.rsplit("/", 1)[-1], *arguments])[:60]


@dataclass(slots=True)
class AssayRun:
    """One finished `assay run`: exit code, wall time, its report and (if sampled) peak RSS."""

    returncode: int
    wall_s: float
    report: dict[str, Any]
    peak_rss_bytes: int = 0
    peak_rss_processes: int = 0
    rss_samples: int = 0
    stderr_tail: str = ""
    records_bytes: int = 0
    peak_rss_breakdown: tuple[tuple[str, int], ...] = ()
    cpu_s: float = 0.0

    @property
    def step(self) -> dict[str, Any]:
        """The first (only) step of the report."""
        steps: list[dict[str, Any]] = self.report["steps"]
        return steps[0]

    @property
    def processes(self) -> int:
        """The load-generating processes the run used."""
        return int(self.report["run_config"]["processes"])


def run_assay(
    arguments: Sequence[str],
    *,
    timeout_s: float,
    sample_rss: bool = False,
    keep_dir: Path | None = None,
    env: dict[str, str] | None = None,
    expect_files: Sequence[str] = (),
    launcher: Sequence[str] | None = None,
) -> AssayRun:
    """`assay run ARGUMENTS --output-dir <temp>`; returns its report, wall time and peak RSS.

    The output directory is a temporary one removed afterwards (records included), unless
    `keep_dir` is given. A run still going after `timeout_s` is killed and raises. `env` adds
    environment variables to the run's (and its load processes'); a file named in
    `expect_files` that the run did not write into its folder raises. `launcher` runs the
    command line instead of the `assay` script (an experiment that changes something in the
    run's own process first).
    """
    work = Path(tempfile.mkdtemp(prefix="assay-perf-")) if keep_dir is None else keep_dir
    output_dir = work / "run"
    entry = assay_command() if launcher is None else list(launcher)
    command = [*entry, "run", *arguments, "--output-dir", str(output_dir)]
    try:
        cpu_before = children_cpu_seconds()
        started = time.perf_counter()
        with tempfile.TemporaryFile() as stderr:
            child = subprocess.Popen(
                command,
                stdout=subprocess.DEVNULL,
                stderr=stderr,
                env=as_installed(env),
            )
            sampler = TreeSampler(psutil.Process(child.pid))
            try:
                if sample_rss:
                    with sampler:
                        returncode = child.wait(timeout_s)
                else:
                    returncode = child.wait(timeout_s)
            except subprocess.TimeoutExpired:
                _kill_tree(child)
                raise RuntimeError(f"assay run overstayed {timeout_s:.0f}s: {command}") from None
            wall_s = time.perf_counter() - started
            cpu_s = children_cpu_seconds() - cpu_before
            stderr.seek(0)
            stderr_tail = stderr.read()[-2000:].decode(errors="replace")
        report_path = output_dir / "report.json"
        if not report_path.exists():
            raise RuntimeError(f"assay run exited {returncode} without a report: {stderr_tail}")
        report: dict[str, Any] = json.loads(report_path.read_text())
        missing = [name for name in expect_files if not (output_dir / name).is_file()]
        if missing:
            raise RuntimeError(f"assay run wrote no {', '.join(missing)}: {stderr_tail}")
        records = output_dir / "records.jsonl"
        return AssayRun(
            returncode=returncode,
            wall_s=wall_s,
            report=report,
            peak_rss_bytes=sampler.peak_bytes,
            peak_rss_processes=sampler.peak_processes,
            rss_samples=sampler.samples,
            stderr_tail=stderr_tail,
            records_bytes=records.stat().st_size if records.exists() else 0,
            peak_rss_breakdown=tuple(sampler.peak_breakdown),
            cpu_s=cpu_s,
        )
    finally:
        if keep_dir is None:
            shutil.rmtree(work, ignore_errors=True)


def children_cpu_seconds() -> float:
    """User + system CPU of every descendant this process has waited for.

    A waited `assay run` has waited for its own load processes, so the difference around one
    run is the CPU of its whole tree; the mock, still running, is not in it.
    """
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def own_cpu_seconds() -> float:
    """User + system CPU of this process so far."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _kill_tree(child: subprocess.Popen[bytes]) -> None:
    try:
        descendants = psutil.Process(child.pid).children(recursive=True)
    except psutil.NoSuchProcess:
        descendants = []
    child.kill()
    for proc in descendants:
        try:
            proc.kill()
        except psutil.NoSuchProcess:
            continue
    child.wait(_STOP_TIMEOUT_S)


def as_installed(extra: dict[str, str] | None = None) -> dict[str, str]:
    """This environment for an assay command, as an installed assay runs: with its bytecode
    cached (pip compiles a package at install; `PYTHONDONTWRITEBYTECODE` set in a developer's
    shell would have every run compile every module again, ~0.3 s), plus `extra`."""
    environment = {
        name: value for name, value in os.environ.items() if name != "PYTHONDONTWRITEBYTECODE"
    }
    return {**environment, **(extra or {})}


def wall_seconds(command: Sequence[str], timeout_s: float) -> float:
    """Wall time of one command run to completion (output discarded); raises if it fails."""
    started = time.perf_counter()
    completed = subprocess.run(
        list(command),
        env=as_installed(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        timeout=timeout_s,
        check=False,
    )
    elapsed = time.perf_counter() - started
    if completed.returncode != 0:
        raise RuntimeError(f"{command} exited {completed.returncode}: {completed.stderr[-500:]!r}")
    return elapsed


def run_figures(run: AssayRun) -> dict[str, Any]:
    """What a peer table keeps of one assay run: its usable rate, outcomes, processes and CPU."""
    metrics = run.step["metrics"]
    return {
        "requests_per_s": round(metrics["throughput"]["usable_requests_per_s"], 1),
        "completed": metrics["outcomes"]["completed"],
        "errored": metrics["outcomes"]["errored"],
        "processes": run.processes,
        "cpu_s": round(run.cpu_s, 3),
    }


def marginal_us(long: dict[str, Any], short: dict[str, Any]) -> float | None:
    """CPU µs per request of the requests a long run completed beyond a short one's."""
    extra = long["completed"] - short["completed"]
    return round((long["cpu_s"] - short["cpu_s"]) / extra * 1e6, 1) if extra > 0 else None
