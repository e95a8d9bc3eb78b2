"""`assay run` with bursty and ramped arrivals, a sweep over concurrency levels, and data that
runs out or is cycled (issue 19), against the embedded mock: the times each request was due
(records), what the mock received (its request record), the report and the console.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import orjson
import pytest
from tests.cli.cli_harness import (
    assert_every_request_accounted,
    read_record_lines,
    read_report,
    run_assay,
    run_fast,
)
from tests.cli.test_cli_bad_input import assert_one_error_line
from tests.cli.wire import received

from assay.load.schedule import gamma_offsets_ns, ramp_offsets_ns
from assay.spec.constraints import StopReason
from assay.spec.load import RateRamp

ONE_PROCESS = ("--processes", "1", "--mock-fault", "empty_stream=0", "--mock-fault",
               "truncated_stream=0", "--mock-fault", "inband_error=0")  # fmt: skip


def _due_offsets_ns(run_dir: Path) -> list[int]:
    """When each request was due, in ns from its step's start, in request order."""
    report = read_report(run_dir)
    (step,) = report.steps
    assert step.timeline is not None
    lines = sorted(read_record_lines(run_dir), key=lambda line: str(line["id"]))
    return [int(line["targeted_start_ns"]) - step.timeline.origin_ns for line in lines]


def test_burstiness_sends_at_the_seeded_gamma_times(tmp_path: Path) -> None:
    result = run_fast(
        tmp_path / "run", *ONE_PROCESS, "--profile", "poisson", "--rate", "40",
        "--burstiness", "0.5", "--max-requests", "30", "--seed", "5",
    )  # fmt: skip
    assert result.exit_code == 0, result.stdout + result.stderr
    report = assert_every_request_accounted(tmp_path / "run")
    assert report.steps[0].scheduled == 30
    assert report.run_config["burstiness"] == 0.5
    assert report.steps[0].burstiness == 0.5
    assert "poisson at 40 req/s (mean), burstiness 0.5 (gamma gaps)" in result.stdout
    expected = list(itertools.islice(gamma_offsets_ns(40.0, 0.5, 5), 30))
    assert _due_offsets_ns(tmp_path / "run") == expected


def test_a_ramp_bounded_by_requests_sends_them_along_its_curve(tmp_path: Path) -> None:
    wire = tmp_path / "wire.jsonl"
    result = run_fast(
        tmp_path / "run", *ONE_PROCESS, "--ramp-up", "linear", "--ramp-up-start-rate", "5",
        "--ramp-up-end-rate", "45", "--max-requests", "50", "--mock-record-requests", wire,
    )  # fmt: skip
    assert result.exit_code == 0, result.stdout + result.stderr
    assert "ramp_up, linear from 5 to 45 req/s over 2 s" in result.stdout
    report = assert_every_request_accounted(tmp_path / "run")
    (step,) = report.steps
    ramp = RateRamp(curve="linear", start_rate=5, end_rate=45, duration_s=2)
    assert step.profile == "ramp_up"
    assert step.ramp == ramp
    assert step.requested_rate is None
    assert step.scheduled == step.metrics.outcomes.dispatched == 50
    assert _due_offsets_ns(tmp_path / "run") == list(
        itertools.islice(ramp_offsets_ns(ramp, None, 42), 50)
    )
    generations = [line for line in received(wire) if line["path"] == "/v1/chat/completions"]
    assert len(generations) == 50


def test_a_ramp_over_max_seconds_draws_achieved_against_target(tmp_path: Path) -> None:
    result = run_fast(
        tmp_path / "run", *ONE_PROCESS, "--ramp-up", "exponential",
        "--ramp-up-start-rate", "4", "--ramp-up-end-rate", "64", "--max-seconds", "2",
        "--burstiness", "2",
    )  # fmt: skip
    assert result.exit_code == 0, result.stdout + result.stderr
    report = read_report(tmp_path / "run")
    (step,) = report.steps
    assert step.ramp == RateRamp(curve="exponential", start_rate=4, end_rate=64, duration_s=2)
    assert step.burstiness == 2.0
    page = (tmp_path / "run" / "report.html").read_text(encoding="utf-8")
    assert "ramp-rate" in page
    # The label travels in the chart data, whose JSON escapes `>` inside the page's script.
    assert "target, 1 ramp_up 4-\\u003e64/s" in page
    # A revalidation keeps what the step offered.
    again = run_assay("revalidate", tmp_path / "run")
    assert again.exit_code in (0, 1), again.stdout + again.stderr
    (judged,) = read_report(tmp_path / "run" / "revalidated").steps
    assert (judged.ramp, judged.burstiness) == (step.ramp, 2.0)


def test_a_concurrency_sweep_runs_a_step_per_level(tmp_path: Path) -> None:
    result = run_fast(
        tmp_path / "run", *ONE_PROCESS, "--profile", "sweep", "--sweep-concurrency", "1,3,6",
        "--max-requests", "12",
    )  # fmt: skip
    assert result.exit_code == 0, result.stdout + result.stderr
    report = assert_every_request_accounted(tmp_path / "run")
    assert [step.profile for step in report.steps] == ["concurrent"] * 3
    assert [step.requested_concurrency for step in report.steps] == [1, 3, 6]
    assert all(step.scheduled is None for step in report.steps)  # closed loops owe no times
    assert [step.metrics.outcomes.dispatched for step in report.steps] == [12, 12, 12]
    assert report.run_config.concurrency == 6
    for streams in ("1 stream ", "3 streams", "6 streams"):
        assert streams in result.stdout


def _four_rows(tmp_path: Path) -> Path:
    data = tmp_path / "four.jsonl"
    data.write_bytes(b"".join(orjson.dumps({"prompt": f"row {i}"}) + b"\n" for i in range(4)))
    return data


def test_a_file_shorter_than_max_requests_says_data_exhausted(tmp_path: Path) -> None:
    result = run_fast(
        tmp_path / "run", *ONE_PROCESS, "--data", _four_rows(tmp_path), "--max-requests", "8"
    )
    assert result.exit_code == 0, result.stdout + result.stderr
    assert "Data exhausted after 4 rows" in result.stdout
    assert "Ran to the end of its schedule" not in result.stdout
    (step,) = read_report(tmp_path / "run").steps
    assert step.stopped_by is StopReason.data_exhausted
    assert step.data_rows == 4
    assert step.metrics.outcomes.dispatched == 4


def test_data_cycle_reuses_the_rows_in_file_order(tmp_path: Path) -> None:
    wire = tmp_path / "wire.jsonl"
    result = run_fast(
        tmp_path / "run", *ONE_PROCESS, "--profile", "synchronous",
        "--data", _four_rows(tmp_path), "--data-cycle", "--max-requests", "10",
        "--mock-record-requests", wire,
    )  # fmt: skip
    assert result.exit_code == 0, result.stdout + result.stderr
    (step,) = read_report(tmp_path / "run").steps
    assert step.stopped_by is StopReason.max_requests
    prompts = [
        line["body"]["messages"][0]["content"]
        for line in received(wire)
        if line["path"] == "/v1/chat/completions"
    ]
    assert prompts == [f"row {i % 4}" for i in range(10)]


def test_config_file_keys_mirror_the_arrival_flags(tmp_path: Path) -> None:
    config = tmp_path / "run.toml"
    config.write_text(
        'ramp-up = "linear"\nramp_up_start_rate = 2.0\nramp-up-end-rate = 6.0\n'
        "burstiness = 1.0\nmax-requests = 8\n",
        encoding="utf-8",
    )
    result = run_fast(tmp_path / "run", *ONE_PROCESS, "--config", config)
    assert result.exit_code == 0, result.stdout + result.stderr
    (step,) = read_report(tmp_path / "run").steps
    assert step.ramp == RateRamp(curve="linear", start_rate=2, end_rate=6, duration_s=2)
    sweep = tmp_path / "sweep.json"
    sweep.write_text(
        '{"profile": "sweep", "sweep_concurrency": [2, 1], "max_requests": 2}', encoding="utf-8"
    )
    result = run_fast(tmp_path / "sweep-run", *ONE_PROCESS, "--config", sweep)
    assert result.exit_code == 0, result.stdout + result.stderr
    steps = read_report(tmp_path / "sweep-run").steps
    assert [step.requested_concurrency for step in steps] == [2, 1]


BAD_ARRIVALS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "burstiness_zero": (
        ("--profile", "poisson", "--rate", "5", "--burstiness", "0"),
        ("burstiness", "greater than or equal to 0.01"),
    ),
    # Issue 37: a shape where the gamma draw is 0 or astronomically large hung the schedule
    # (1e-300) or crashed it (5e-324, not a number to an integer).
    "burstiness_tiny": (
        ("--profile", "poisson", "--rate", "5", "--burstiness", "1e-300"),
        ("--burstiness", "greater than or equal to 0.01"),
    ),
    "burstiness_subnormal": (
        ("--profile", "constant", "--rate", "5", "--burstiness", "5e-324"),
        ("--burstiness", "greater than or equal to 0.01"),
    ),
    "burstiness_huge": (
        ("--profile", "poisson", "--rate", "5", "--burstiness", "1e300"),
        ("--burstiness", "less than or equal to 1000"),
    ),
    "burstiness_infinite": (
        (
            "--ramp-up",
            "linear",
            "--ramp-up-start-rate",
            "1",
            "--ramp-up-end-rate",
            "5",
            "--burstiness",
            "inf",
        ),
        ("--burstiness", "finite"),
    ),
    "burstiness_on_a_closed_loop": (("--burstiness", "0.5"), ("--burstiness", "throughput")),
    "ramp_without_rates": (("--ramp-up", "linear"), ("--ramp-up-start-rate", "--ramp-up-end-rate")),
    "ramp_without_end_rate": (
        ("--ramp-up", "linear", "--ramp-up-start-rate", "2"),
        ("--ramp-up-end-rate",),
    ),
    "ramp_negative_rate": (
        ("--ramp-up", "linear", "--ramp-up-start-rate", "-2", "--ramp-up-end-rate", "5"),
        ("ramp-up-start-rate", "greater than 0"),
    ),
    "ramp_unknown_curve": (
        ("--ramp-up", "cubic", "--ramp-up-start-rate", "1", "--ramp-up-end-rate", "5"),
        ("ramp-up", "linear", "exponential"),
    ),
    "ramp_rate_without_ramp": (
        ("--profile", "constant", "--rate", "5", "--ramp-up-end-rate", "5"),
        ("--ramp-up-end-rate", "--ramp-up"),
    ),
    "ramp_on_another_profile": (
        ("--profile", "constant", "--rate", "5", "--ramp-up", "linear"),
        ("--ramp-up", "ramp_up", "constant"),
    ),
    "ramp_with_rate": (
        (
            "--ramp-up",
            "linear",
            "--ramp-up-start-rate",
            "1",
            "--ramp-up-end-rate",
            "5",
            "--rate",
            "3",
        ),
        ("--rate", "ramp_up"),
    ),
    "sweep_concurrency_zero_and_text": (
        ("--profile", "sweep", "--sweep-concurrency", "0,x"),
        ("sweep-concurrency", "'0'", "1,4,16,64"),
    ),
    "sweep_concurrency_repeated": (
        ("--profile", "sweep", "--sweep-concurrency", "4,4"),
        ("sweep-concurrency", "repeat"),
    ),
    "sweep_concurrency_without_sweep": (
        ("--sweep-concurrency", "1,2"),
        ("--sweep-concurrency", "sweep", "throughput"),
    ),
    "sweep_concurrency_with_sweep_rates": (
        ("--profile", "sweep", "--sweep-concurrency", "1,2", "--sweep-rates", "3"),
        ("--sweep-rates", "--sweep-concurrency"),
    ),
    "data_cycle_without_data": (("--data-cycle",), ("--data-cycle", "--data")),
}


@pytest.mark.parametrize("case", sorted(BAD_ARRIVALS))
def test_bad_arrival_flags_are_one_error_line_and_exit_code_2(tmp_path: Path, case: str) -> None:
    flags, words = BAD_ARRIVALS[case]
    result = run_fast(tmp_path / "run", "--max-requests", "5", "--processes", "1", *flags)
    assert_one_error_line(result, *words)
    assert not (tmp_path / "run" / "report.json").exists()


def test_an_unbounded_ramp_or_cycle_is_one_error_line(tmp_path: Path) -> None:
    ramp = run_fast(
        tmp_path / "ramp", "--processes", "1", "--ramp-up", "linear",
        "--ramp-up-start-rate", "1", "--ramp-up-end-rate", "5",
    )  # fmt: skip
    assert_one_error_line(ramp, "--ramp-up", "--max-seconds", "--max-requests")
    cycle = run_fast(
        tmp_path / "cycle", "--processes", "1", "--data", _four_rows(tmp_path), "--data-cycle"
    )
    assert_one_error_line(cycle, "--data-cycle", "--max-requests", "--max-seconds")
