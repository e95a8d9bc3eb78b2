"""A capacity search's report: built from its steps, said on the console, drawn in report.html,
kept in report.json, and compared between runs."""

from __future__ import annotations

from datetime import UTC, datetime

from assay.load.benchmark_plan import StepResult
from assay.load.loop_probe import ClientLoad
from assay.load.progress import OutcomeTotals
from assay.load.slo_tally import SloMisses
from assay.metrics import StepAggregator
from assay.reports import Report, StepReport, build_report
from assay.reports.capacity import CapacityReport, capacity_lines, passing_steps
from assay.reports.capacity_chart import capacity_sections
from assay.reports.capacity_search import capacity_report
from assay.reports.compare import capacity_change
from assay.reports.compare import capacity_lines as compared_lines
from assay.spec.capacity import Capacity, SloTarget
from assay.spec.load import Constant
from assay.spec.run import RunEcho

PROFILE = Capacity(slos=(SloTarget.parse("ttft_ms=500@p90"),), start=10, step_s=10)
NOW = datetime(2026, 1, 1, tzinfo=UTC)


def step(
    index: int, rate: float, attempted: int, missed: int, client: tuple[ClientLoad, ...] = ()
) -> StepResult[None]:
    return StepResult(
        index=index,
        load=Constant(rate=rate),
        started_ns=0,
        finished_ns=10_000_000_000,
        totals=OutcomeTotals(attempted, attempted - missed, missed, 0),
        errors_by_code={},
        stopped_by=None,
        sink_results=[],
        scheduled=attempted,
        slo_misses=SloMisses(attempted, (missed,)),
        client=client,
    )


# 10/s and 20/s pass, 40/s fails, 30/s is undecided once (12 of 100) then passes pooled.
STEPS = [
    step(0, 10.0, 100, 0),
    step(1, 20.0, 200, 0),
    step(2, 40.0, 400, 200),
    step(3, 30.0, 100, 12),
    step(4, 30.0, 1000, 60),
]


def searched() -> CapacityReport:
    return capacity_report(PROFILE, STEPS, [9.5, 19.0, 11.0, 27.0, 28.5])


def test_the_report_holds_the_bracket_the_failed_slo_and_the_goodput_at_capacity() -> None:
    report = searched()
    assert (report.capacity, report.first_fail) == (30.0, 40.0)
    assert [(level.level, level.steps, level.verdict) for level in report.levels] == [
        (10.0, (0,), "pass"),
        (20.0, (1,), "pass"),
        (40.0, (2,), "fail"),
        (30.0, (3, 4), "pass"),
    ]
    assert report.levels[3].attempted == 1100
    assert report.failed_slo is not None
    assert report.failed_slo.missed == 200
    assert report.goodput_at_capacity == 28.5  # the last step run at 30/s
    assert passing_steps(report) == {0, 1, 3, 4}


def test_the_console_says_each_load_then_the_answer() -> None:
    lines = capacity_lines(searched())
    assert len(lines) == 1 + 4 + 1
    assert "step 4+5: 30 req/s  PASS" in lines[4]
    assert "72 of 1100 missed" in lines[4]
    assert "step 3: 40 req/s  FAIL" in lines[3]
    assert lines[-1].startswith("capacity: 30 req/s (bracket [30, 40]); first failed at 40: ")
    assert "ttft_ms=500@p90, 50 % missed of 10 % allowed" in lines[-1]
    assert "goodput at capacity 28.5 req/s" in lines[-1]


def run_report(capacity: CapacityReport | None) -> Report:
    steps = [
        StepReport.of(index, "constant", StepAggregator().snapshot(), requested_rate=rate)
        for index, rate in enumerate((10.0, 20.0, 40.0, 30.0, 30.0))
    ]
    return build_report(
        run_config=RunEcho(),
        steps=steps,
        started_at=NOW,
        finished_at=NOW,
        max_error_rate=0.05,
        capacity=capacity,
    )


def test_report_json_keeps_the_search_and_reads_it_back() -> None:
    report = run_report(searched())
    again = Report.model_validate_json(report.model_dump_json())
    assert again.capacity == report.capacity
    assert "capacity" not in run_report(None).model_dump(mode="json")


def test_report_html_draws_goodput_and_each_slo_against_the_load() -> None:
    [(title, figures)] = capacity_sections(run_report(searched()))
    assert title == "Capacity"
    assert [figure.id for figure in figures] == ["capacity-goodput", "capacity-slo-0"]
    goodput = figures[0]
    assert goodput.data[1]["x"] == [10.0, 20.0, 30.0, 40.0]  # sorted by load
    shapes = goodput.layout["shapes"]
    assert isinstance(shapes, list)
    band = shapes[0]
    assert isinstance(band, dict)
    assert (band["type"], band["x0"], band["x1"]) == ("rect", 30.0, 40.0)  # the bracket
    misses = figures[1].data[1]["y"]
    assert misses == [0.0, 0.0, 100 * 72 / 1100, 50.0]
    assert capacity_sections(run_report(None)) == []


def test_compare_judges_capacities_by_their_brackets() -> None:
    base = searched()
    lower = base.model_copy(update={"capacity": 15.0, "first_fail": 20.0})
    overlapping = base.model_copy(update={"capacity": 35.0, "first_fail": 45.0})
    higher = base.model_copy(update={"capacity": 40.0, "first_fail": 44.0})
    other_slo = base.model_copy(update={"slos": ("ttft_ms=300@p90",)})
    assert capacity_change(base, lower) == "worse"
    assert capacity_change(base, overlapping) == "~"
    assert capacity_change(base, higher) == "better"
    assert capacity_change(base, other_slo) == "not comparable"
    lines = compared_lines([run_report(base), run_report(lower)])
    assert lines[1] == "  run 1: 30 req/s [30, 40] (baseline)"
    assert lines[2] == "  run 2: 15 req/s [15, 20] worse"
