"""`assay run --profile capacity` end to end against the embedded mock with a known capacity,
and its bad input refused with one error line."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from tests.cli.cli_harness import read_record_lines, read_report, run_assay, run_fast
from tests.cli.test_cli_bad_input import assert_one_error_line

# 40 slots answering in 0.5 s (two tokens, no gap between them): 80 requests/s. The loads
# offered from 21.3/s (42.6, 85.2, 63.9, 74.55) keep 6 % clear of it, where a 6 s step tells
# over from under (see tests/load/test_capacity_end_to_end.py).
FINITE_MOCK = (
    "--mock-slots", "40", "--mock-ttft-ms", "500", "--mock-itl-ms", "0",
    "--mock-fault", "empty_stream=0", "--output-tokens", "2", "--prompt-tokens", "16",
)  # fmt: skip
CAPACITY = 80.0

BAD_INPUT: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "no_slo": ((), ("capacity needs an SLO", "--slo")),
    "percentile_100": (("--slo", "ttft_ms=500@p100"), ("--slo", "within (0, 100)")),
    "percentile_0": (("--slo", "ttft_ms=500@p0"), ("--slo", "within (0, 100)")),
    "percentile_not_a_number": (("--slo", "ttft_ms=500@pmost"), ("--slo", "pXX")),
    "precision_0": (("--slo", "ttft_ms=500", "--capacity-precision", "0%"), ("precision",)),
    "budget_below_one_step": (
        ("--slo", "ttft_ms=500", "--max-seconds", "5"),
        ("--max-seconds", "one decided step"),
    ),
    "itl_of_whole_answers": (
        ("--slo", "itl_ms=50@p90", "--no-stream"),
        ("itl_ms", "does not produce", "streamed"),
    ),
    "ttft_of_embeddings": (
        ("--slo", "ttft_ms=50", "--endpoint", "embeddings"),
        ("ttft_ms", "does not produce", "e2e_ms"),
    ),
}


@pytest.mark.parametrize("case", sorted(BAD_INPUT))
def test_bad_capacity_input_is_one_error_line(tmp_path: Path, case: str) -> None:
    flags, words = BAD_INPUT[case]
    run = ("run", "--output-dir", tmp_path / "run", "--processes", "1", "--profile", "capacity")
    assert_one_error_line(run_assay(*run, *flags), *words)


def test_a_percentile_on_another_profile_is_refused(tmp_path: Path) -> None:
    result = run_fast(tmp_path / "run", "--max-requests", "5", "--slo", "ttft_ms=500@p99")
    assert_one_error_line(result, "percentile applies to --profile capacity")


def test_capacity_of_40_slots_is_bracketed_in_two_processes(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    result = run_assay(
        "run", *FINITE_MOCK, "--output-dir", run_dir, "--processes", "2",
        "--profile", "capacity", "--slo", "ttft_ms=600@p90", "--capacity-step-s", "6",
        "--capacity-start", "21.3", "--capacity-precision", "15%", "--max-seconds", "90",
        timeout_s=180,
    )  # fmt: skip
    assert result.exit_code == 0, result.stdout + result.stderr
    report = read_report(run_dir)
    capacity = report.capacity
    assert capacity is not None
    if capacity.end == "client_bound":
        # A loaded machine starved the client: the search may stop there, but only when a
        # step says so, and it claims no failure at or below the server's capacity.
        assert any(step.client_bound for step in report.steps)
        assert capacity.capacity is None or capacity.capacity <= CAPACITY
        assert capacity.first_fail is None or capacity.first_fail > CAPACITY
        return
    assert capacity.end == "precise"
    assert capacity.capacity is not None
    assert capacity.first_fail is not None
    assert capacity.capacity <= CAPACITY < capacity.first_fail
    assert capacity.first_fail - capacity.capacity <= 0.15 * capacity.capacity
    assert capacity.failed_slo is not None
    assert capacity.failed_slo.slo == "ttft_ms=600@p90"
    # The console: one line per load offered, then the answer.
    assert f"capacity: {capacity.capacity:g} req/s (bracket [" in result.stdout
    assert result.stdout.count(" req/s  PASS ") + result.stdout.count(" req/s  FAIL ") == len(
        capacity.levels
    )
    # Every probe step is an ordinary step: its records, and the accounting.
    lines = Counter(int(line["step"]) for line in read_record_lines(run_dir))
    for step in report.steps:
        outcomes = step.metrics.outcomes
        assert outcomes.dispatched == outcomes.completed + outcomes.errored + outcomes.cancelled
        assert lines[step.index] == outcomes.dispatched + step.metrics.excluded
        assert step.scheduled == lines[step.index] + step.not_sent
    offered = [level.level for level in capacity.levels]
    assert len(offered) == len(set(offered))  # no load decided twice


def test_a_config_files_slo_table_is_the_capacity_searchs_slos(tmp_path: Path) -> None:
    from assay.cli.run_overrides import read_run_config
    from assay.spec.capacity import Capacity

    config_file = tmp_path / "bench.toml"
    config_file.write_text('profile = "capacity"\nslo = { ttft_ms = 500, e2e_ms = 4000 }\n')
    load = read_run_config({"config": config_file}).load
    assert isinstance(load, Capacity)
    assert [str(slo) for slo in load.slos] == ["ttft_ms=500@p99", "e2e_ms=4000@p99"]
    # A flag's percentile SLO still wins over the file's table.
    flags = {"config": config_file, "slo": ["tpot_ms=50@p90"]}
    flagged = read_run_config(flags).load
    assert isinstance(flagged, Capacity)
    assert [str(slo) for slo in flagged.slos] == ["tpot_ms=50@p90"]
