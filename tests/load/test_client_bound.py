"""The client-bound verdict: each load process measures its event loop's lag (a timer probe)
and its CPU; a step whose process read what arrived late says "CLIENT-BOUND: ..." in
report.json, the console and report.html. The rule is checked with fake clocks; one real run
saturates its process on purpose (a validator that burns the CPU) and a quiet one does not."""

from __future__ import annotations

from pathlib import Path

from playwright.sync_api import sync_playwright

from assay.load.loop_probe import LoopProbe, client_saturated
from assay.reports.client_bound import client_bound_line
from tests.cli.cli_harness import FAST, read_report, run_assay
from tests.reports.browser import CHROMIUM_ARGS, chromium_path

MS = 1_000_000


class _Clocks:
    """A fake wall clock and a fake CPU clock for a probe driven by hand."""

    def __init__(self) -> None:
        self.now = 0
        self.cpu = 0

    def now_ns(self) -> int:
        return self.now

    def cpu_ns(self) -> int:
        return self.cpu


def _probe_run(late_ms: float, cpu_share: float, ticks: int = 100) -> LoopProbe:
    """A probe whose timer (every 10 ms) ran `late_ms` late each time, over a process that
    used `cpu_share` of the wall time."""
    clocks = _Clocks()
    probe = LoopProbe(0, interval_ns=10 * MS, now_ns=clocks.now_ns, cpu_ns=clocks.cpu_ns)
    for _ in range(ticks):
        step = 10 * MS + round(late_ms * MS)
        clocks.now += step
        clocks.cpu += round(step * cpu_share)
        probe.tick()
    return probe


def test_a_loop_late_by_8_ms_on_a_busy_core_is_client_bound() -> None:
    load = _probe_run(late_ms=8, cpu_share=0.95).snapshot()
    assert load.ticks == 100
    assert load.lag_mean_ms == 8.0
    assert load.lag_max_ms == 8.0
    assert load.lag_p99_ms == 8.0  # the bucket (5, 10] ms, bounded by the largest lag
    assert load.cpu_busy == 0.95
    assert client_saturated(load)
    line = client_bound_line((load,))
    assert line is not None
    assert line.startswith("CLIENT-BOUND: load process 0's event loop ran 8.0 ms late")
    assert "while it used 95 % of a core" in line
    assert line.endswith("include up to 8 ms of client delay; add --processes or a machine")


def test_a_loop_late_on_a_machine_that_gave_it_little_cpu_says_so() -> None:
    load = _probe_run(late_ms=12, cpu_share=0.3).snapshot()
    line = client_bound_line((load,))
    assert line is not None
    assert "while it got only 30 % of a core (the machine was busy)" in line


def test_a_quiet_loop_is_not_client_bound() -> None:
    load = _probe_run(late_ms=0.3, cpu_share=0.05).snapshot()
    assert load.lag_mean_ms == 0.3
    assert not client_saturated(load)
    assert client_bound_line((load,)) is None


def test_one_wake_up_after_a_long_block_counts_once() -> None:
    clocks = _Clocks()
    probe = LoopProbe(0, interval_ns=10 * MS, now_ns=clocks.now_ns, cpu_ns=clocks.cpu_ns)
    clocks.now = 510 * MS  # the loop was blocked for half a second
    probe.tick()
    clocks.now += 10 * MS  # then ran on time
    probe.tick()
    load = probe.snapshot()
    assert load.ticks == 2
    assert load.lag_max_ms == 500.0
    assert load.lag_mean_ms == 250.0


BURNER = """\
import time

from returns.result import Result, Success

from assay import GenerationResponse, UnusableResponse


def burn(response: GenerationResponse) -> Result[GenerationResponse, UnusableResponse]:
    # Holds the event loop on the CPU for 15 ms per answer: the process saturates on purpose.
    end = time.perf_counter() + 0.015
    while time.perf_counter() < end:
        pass
    return Success(response)
"""


def test_a_run_that_saturates_its_process_is_client_bound_and_a_quiet_one_is_not(
    tmp_path: Path,
) -> None:
    (tmp_path / "burner.py").write_text(BURNER, encoding="utf-8")
    busy_dir, quiet_dir = tmp_path / "busy", tmp_path / "quiet"
    busy = run_assay(
        "run", *FAST, "--max-requests", "80", "--concurrency", "8", "--processes", "1",
        "--validator", "burner:burn", "--output-dir", busy_dir, cwd=tmp_path,
    )  # fmt: skip
    assert busy.exit_code == 0, busy.stdout + busy.stderr
    quiet = run_assay(
        "run", "--profile", "synchronous", "--max-requests", "15", "--output-tokens", "8",
        "--processes", "1", "--output-dir", quiet_dir, cwd=tmp_path,
    )  # fmt: skip
    assert quiet.exit_code == 0, quiet.stdout + quiet.stderr

    [busy_step] = read_report(busy_dir).steps
    [load] = busy_step.client_load
    assert load.lag_mean_ms >= 5.0, load
    assert busy_step.client_bound is not None
    assert busy_step.client_bound.startswith("CLIENT-BOUND: load process 0")
    assert "CLIENT-BOUND: load process 0" in busy.stdout
    assert _banner(busy_dir / "report.html").startswith("Step 0: CLIENT-BOUND: load process 0")

    [quiet_step] = read_report(quiet_dir).steps
    [calm] = quiet_step.client_load
    assert calm.ticks > 0
    assert calm.lag_mean_ms < 5.0, calm
    assert quiet_step.client_bound is None
    assert "CLIENT-BOUND" not in quiet.stdout
    assert "CLIENT-BOUND" not in (quiet_dir / "report.html").read_text()


def _banner(page: Path) -> str:
    """The client-bound banner's text as a browser shows it."""
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=chromium_path(), args=list(CHROMIUM_ARGS)
        )
        try:
            tab = browser.new_page()
            tab.goto(page.resolve().as_uri())
            banner = tab.locator("#client-bound")
            assert banner.is_visible()
            return banner.inner_text()
        finally:
            browser.close()
