"""A capacity search whose load process could not keep up: each step carries its process's
loop figures (`client_load`), the search reads them (`probe_of`), and the report says why it
stopped. Steps are built by hand; no clock runs."""

from __future__ import annotations

from assay.load.benchmark_plan import StepResult, probe_of
from assay.load.loop_probe import ClientLoad
from assay.reports.capacity import CapacityReport, capacity_lines
from assay.reports.capacity_chart import capacity_sections
from assay.reports.capacity_search import capacity_report
from assay.spec.capacity import Capacity, SloTarget
from tests.reports.test_capacity_report import run_report
from tests.reports.test_capacity_report import step as report_step

PROFILE = Capacity(
    slos=(SloTarget.parse("ttft_ms=100@p90"),), start=16, step_s=6, max_lengthening=1
)


def client(lag_mean_ms: float) -> ClientLoad:
    return ClientLoad(
        process=0, wall_s=6, cpu_s=0.3, cpu_busy=0.05, interval_ms=10, ticks=500,
        lag_mean_ms=lag_mean_ms, lag_p99_ms=50, lag_max_ms=60,
    )  # fmt: skip


def step(index: int, rate: float, missed: int, lag_mean_ms: float) -> StepResult[None]:
    return report_step(index, rate, round(rate * 4.5), missed, (client(lag_mean_ms),))


def test_a_step_whose_loop_ran_late_is_client_bound_for_the_search() -> None:
    assert probe_of(PROFILE, step(0, 16.0, 0, lag_mean_ms=12.7)).client_bound
    assert not probe_of(PROFILE, step(0, 16.0, 0, lag_mean_ms=0.4)).client_bound


def test_a_search_stopped_by_a_starved_client_says_so_and_claims_no_failure() -> None:
    # Measured under a load average of 8 against a 60/s server: 32/s "failed" (30 of 144
    # missed) while the loop ran 12.7 ms late on average; run again, it still did.
    steps = [
        step(0, 16.0, 0, lag_mean_ms=7.5),
        step(1, 32.0, 30, lag_mean_ms=12.7),
        step(2, 32.0, 31, lag_mean_ms=11.0),
    ]
    report = capacity_report(PROFILE, steps)
    assert report.end == "client_bound"
    assert (report.capacity, report.first_fail) == (16.0, None)
    answer = capacity_lines(report)[-1]
    assert answer.startswith("capacity: 16 req/s (bracket [16, not shown]); ")
    assert answer.endswith("failed while the client could not keep up (client-bound)")
    # The load's line says how many of its steps the client could not keep up with, and the
    # report keeps it.
    lines = capacity_lines(report)
    assert "32 req/s  FAIL" in lines[-2]
    assert lines[-2].endswith("; 2 of 2 client-bound)")
    assert [level.client_bound_steps for level in report.levels] == [1, 2]  # 7.5 ms: late too
    assert CapacityReport.model_validate_json(report.model_dump_json()) == report


def test_a_budget_spent_on_a_client_bound_rerun_shows_no_upper_end() -> None:
    # The time ran out while the failing client-bound load was being run again: the search ends
    # on its budget, and the load above the capacity still failed only where the client lagged.
    profile = PROFILE.model_copy(update={"budget_s": 13.0})
    steps = [step(0, 16.0, 0, lag_mean_ms=0.4), step(1, 32.0, 30, lag_mean_ms=12.7)]
    report = capacity_report(profile, steps)
    assert report.end == "budget"
    assert report.first_fail is None
    assert "client_bound_steps" not in report.levels[0].model_dump_json()
    assert capacity_lines(report)[-1].startswith("capacity: 16 req/s (bracket [16, not shown]); ")


def test_report_html_draws_a_client_bound_failure_apart_from_a_failure() -> None:
    steps = [step(0, 16.0, 0, lag_mean_ms=0.4), step(1, 32.0, 30, lag_mean_ms=12.7)]
    steps.append(step(2, 32.0, 31, lag_mean_ms=11.0))
    [(_, figures)] = capacity_sections(run_report(capacity_report(PROFILE, steps)))
    for figure in figures:
        series = figure.data[1] if figure.id == "capacity-goodput" else figure.data[0]
        marker = series["marker"]
        assert isinstance(marker, dict)
        assert marker["color"] == ["#2e7d32", "#f9a825"]  # 16/s passed; 32/s not judged
        assert "amber: client-bound, not judged" in str(series["name"])
    # A search whose client kept up names no amber.
    [(_, figures)] = capacity_sections(run_report(capacity_report(PROFILE, steps[:1])))
    assert "amber" not in str(figures[0].data[1]["name"])
