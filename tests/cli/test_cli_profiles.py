"""`assay run` with every load profile against the embedded mock: the three files, every
request accounted for, and a sweep whose rates sit between the two rates it measured."""

from __future__ import annotations

import csv
import typing
from pathlib import Path

import pytest
from tests.cli.cli_harness import assert_every_request_accounted, run_fast
from tests.load.profile_examples import example_flat_keys

from assay.reports import Report
from assay.spec.flat import flag_of
from assay.spec.load import ProfileKind

# The profiles whose run has a test of its own, and where.
OWN_TEST: dict[str, str] = {
    "ramp_up": "test_cli_arrivals.py",
    "replay": "test_cli_replay.py (it needs a trace)",
    "sweep": "below",
    "capacity": "test_cli_capacity.py",
}


def profile_flags(kind: ProfileKind) -> tuple[str, ...] | None:
    """The flags of a short run of profile `kind`: its required parameters at the examples
    their fields declare (`tests.load.profile_examples`); None for a profile in `OWN_TEST`."""
    if kind in OWN_TEST:
        return None
    keys = example_flat_keys(kind)
    del keys["profile"]
    return tuple(
        part
        for key, value in keys.items()
        for item in (value if isinstance(value, list) else [value])
        for part in (flag_of(key), str(item))
    )


PROFILE_FLAGS: dict[str, tuple[str, ...]] = {
    kind: flags
    for kind in typing.get_args(ProfileKind)
    if (flags := profile_flags(kind)) is not None
}


def test_the_profiles_with_a_test_of_their_own_are_profiles() -> None:
    assert set(OWN_TEST) < set(typing.get_args(ProfileKind))


@pytest.fixture(scope="module")
def sweep_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Report]:
    """A small sweep: 1 ms between tokens keeps synchronous well below throughput."""
    run_dir = tmp_path_factory.mktemp("sweep")
    result = run_fast(
        run_dir,
        "--profile", "sweep", "--sweep-rates", "2", "--concurrency", "16",
        "--mock-itl-ms", "1", "--max-seconds", "1", "--processes", "1",
    )  # fmt: skip
    assert result.exit_code == 0, result.stdout + result.stderr
    return run_dir, assert_every_request_accounted(run_dir)


def summary_rows(run_dir: Path) -> list[dict[str, str]]:
    with (run_dir / "summary.csv").open(newline="") as handle:
        return list(csv.DictReader(handle))


@pytest.mark.parametrize("profile", sorted(PROFILE_FLAGS))
def test_each_profile_runs_end_to_end_and_accounts_for_every_request(
    tmp_path: Path, profile: str
) -> None:
    result = run_fast(
        tmp_path,
        "--profile", profile, *PROFILE_FLAGS[profile],
        "--max-seconds", "1", "--max-requests", "300", "--processes", "1",
    )  # fmt: skip
    assert result.exit_code == 0, result.stdout + result.stderr
    assert "VALID RUN" in result.stdout
    report = assert_every_request_accounted(tmp_path)
    assert [step.profile for step in report.steps] == [profile]
    assert report.totals.outcomes.completed > 0
    assert report.run_config["profile"] == profile
    rows = summary_rows(tmp_path)
    assert [row["profile"] for row in rows] == [profile]
    assert int(rows[0]["dispatched"]) == report.steps[0].metrics.outcomes.dispatched


def test_rate_profiles_report_the_rate_they_were_asked_for(tmp_path: Path) -> None:
    # The demo faults may hit a few of the ~40 requests; validity is not what this test is about.
    result = run_fast(
        tmp_path, "--profile", "poisson", "--rate", "40", "--max-seconds", "1", "--processes", "2",
        "--max-error-rate", "1",
    )  # fmt: skip
    assert result.exit_code == 0, result.stdout + result.stderr
    report = assert_every_request_accounted(tmp_path)
    (step,) = report.steps
    assert step.requested_rate == 40.0
    assert step.requested_concurrency is None
    assert report.run_config["processes"] == 2


def test_sweep_runs_synchronous_throughput_then_its_constant_rates(
    sweep_run: tuple[Path, Report],
) -> None:
    run_dir, report = sweep_run
    assert [step.profile for step in report.steps] == [
        "synchronous",
        "throughput",
        "constant",
        "constant",
    ]
    assert [step.index for step in report.steps] == [0, 1, 2, 3]
    assert [row["profile"] for row in summary_rows(run_dir)] == [
        step.profile for step in report.steps
    ]
    assert all(step.metrics.outcomes.completed > 0 for step in report.steps)


def test_sweep_rates_rise_strictly_between_the_synchronous_and_throughput_rates(
    sweep_run: tuple[Path, Report],
) -> None:
    _, report = sweep_run
    synchronous, throughput, *constant = report.steps
    low = synchronous.metrics.throughput.usable_requests_per_s
    high = throughput.metrics.throughput.usable_requests_per_s
    assert low < high
    rates = [step.requested_rate for step in constant]
    assert all(rate is not None for rate in rates)
    requested = [rate for rate in rates if rate is not None]
    assert requested == sorted(requested)
    assert len(set(requested)) == len(requested)
    assert all(low < rate < high for rate in requested), (low, requested, high)
