"""A traffic mix reported per model (issue 39): the sinks aggregate each model's records beside
the step's, across processes and from a lost process's shard; report.json, the totals, the
console, summary.csv, `assay compare` and report.html (in Chromium) show each model; a run of
one model is written as before."""

from __future__ import annotations

import csv
import io
import json
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

import orjson
import pytest
from playwright.sync_api import sync_playwright
from rich.console import Console

from assay.benchmark.run import step_report
from assay.benchmark.shard_sink import ShardSinkFactory, merged_models
from assay.core import (
    DiagnosticCode,
    Endpoint,
    GenerationResponse,
    ResponseTiming,
    TextAnswer,
    TokenSource,
    UnusableResponse,
    Usage,
)
from assay.engine import Constraints, StepContext, run_benchmark, start_load_processes
from assay.metrics import Slo, StepAggregator
from assay.records import Completed, Errored, JudgedBy, RequestRecord
from assay.reports import Report, StepReport, build_report, collect_environment, render_summary
from assay.reports.compare import align_steps, compare_step, model_groups
from assay.reports.files import SUMMARY_COLUMNS, summary_csv
from assay.reports.html import render_html
from assay.run_folder import shard_name
from assay.spec.run import RunEcho
from tests.cli.cli_harness import read_record_lines, read_report, run_assay, run_fast
from tests.load.test_coordinator import two_process_plan
from tests.reports.browser import CHROMIUM_ARGS, chromium_path
from tests.reports.mixed_sinks import MODELS, MixedSinks, model_of

MS = 1_000_000
NOW = datetime(2026, 12, 6, 9, 0, tzinfo=UTC)
Record = RequestRecord[GenerationResponse]


def _completed(i: int, ttft_ms: float, model: str | None) -> Record:
    send = i * 10 * MS
    first = send + round(ttft_ms * MS)
    times = tuple(first + k * 2 * MS for k in range(4))
    return Record(
        request_id=f"r{i}",
        targeted_start_ns=send,
        dispatched_ns=send,
        finished_ns=times[-1],
        model=model,
        outcome=Completed(
            response=GenerationResponse(
                request_id=f"r{i}",
                endpoint=Endpoint.chat,
                streamed=True,
                answer=TextAnswer(text="abcd"),
                finish_reason="stop",
                usage=Usage(prompt_tokens=8, completion_tokens=4),
                content_chunks=4,
                streamed_tokens=4,
                streamed_token_source=TokenSource.stream,
                terminal_seen=True,
                timing=ResponseTiming(
                    send_ns=send,
                    first_token_ns=first,
                    end_ns=times[-1],
                    chunk_times_ns=times,
                    chunk_tokens=(1, 1, 1, 1),
                ),
            )
        ),
    )


def _errored(i: int, model: str | None) -> Record:
    send = i * 10 * MS
    return Record(
        request_id=f"e{i}",
        targeted_start_ns=send,
        dispatched_ns=send,
        finished_ns=send + 3 * MS,
        model=model,
        outcome=Errored(
            diagnostic=UnusableResponse(code=DiagnosticCode.http_status, message="HTTP 503"),
            judged_by=JudgedBy.transport,
        ),
    )


def _mix(count: int) -> list[Record]:
    """`count` records: even ones for "fast" (TTFT 5 ms), odd ones for "slow" (TTFT 50 ms),
    and every fifth of "slow" errored."""
    records = []
    for i in range(count):
        if i % 2 == 0:
            records.append(_completed(i, 5, "fast"))
        elif i % 5 == 0:
            records.append(_errored(i, "slow"))
        else:
            records.append(_completed(i, 50, "slow"))
    return records


def _context(process: int = 0) -> StepContext:
    return StepContext(step=0, process=process, processes=2, start_ns=0, measured_window=(0, None))


def _step(records: list[Record], index: int = 0, slo: Slo | None = None) -> StepReport:
    factory = ShardSinkFactory(Path("/nonexistent"), slo=slo)
    whole = factory.aggregator_for(_context())
    models: dict[str, StepAggregator] = {}
    for record in records:
        whole.add(record)
        if record.model is not None:
            models.setdefault(record.model, factory.aggregator_for(_context())).add(record)
    snapshots = {name: models[name].snapshot() for name in sorted(models)} or None
    return StepReport.of(
        index, "constant", whole.snapshot(), requested_rate=100.0, models=snapshots
    )


def _report(*steps: StepReport) -> Report:
    return build_report(
        run_config=RunEcho(profile="constant"),
        steps=steps,
        started_at=NOW,
        finished_at=NOW,
        max_error_rate=1.0,
        environment=collect_environment(include_hostname=False),
    )


def test_a_sink_aggregates_each_named_model_beside_the_step(tmp_path: Path) -> None:
    factory = ShardSinkFactory(tmp_path)
    sink = factory(_context())
    for record in _mix(200):
        sink.add(record)
    summary = sink.close()
    assert summary.models is not None
    fast, slow = summary.models["fast"].snapshot(), summary.models["slow"].snapshot()
    assert (fast.outcomes.dispatched, fast.outcomes.errored) == (100, 0)
    assert (slow.outcomes.dispatched, slow.outcomes.errored) == (100, 20)
    assert fast.latency.ttft_ms is not None
    assert slow.latency.ttft_ms is not None
    assert fast.latency.ttft_ms.p50 < 6 < 49 < slow.latency.ttft_ms.p50
    assert slow.errors_by_code[DiagnosticCode.http_status].count == 20
    whole = summary.aggregator.snapshot()
    assert whole.outcomes.dispatched == 200  # the step counts every model


def test_a_sink_of_one_model_keeps_no_models(tmp_path: Path) -> None:
    sink = ShardSinkFactory(tmp_path)(_context())
    for i in range(10):
        sink.add(_completed(i, 5, None))
    assert sink.close().models is None


def test_models_merge_across_processes_as_one_aggregator_of_every_record(tmp_path: Path) -> None:
    factory = ShardSinkFactory(tmp_path)
    records = _mix(300)
    sinks = [factory(_context(0)), factory(_context(1))]
    for i, record in enumerate(records):
        sinks[i % 3 == 0].add(record)  # unevenly over the two processes
    merged = merged_models([sink.close() for sink in sinks])
    assert merged is not None
    for name in ("fast", "slow"):
        one = factory.aggregator_for(_context())
        for record in records:
            if record.model == name:
                one.add(record)
        alone = one.snapshot()
        assert merged[name].outcomes == alone.outcomes
        assert merged[name].latency.ttft_ms == alone.latency.ttft_ms
        assert merged[name].throughput == alone.throughput
    assert merged_models([]) is None


def test_a_lost_process_shard_rebuilds_its_models(tmp_path: Path) -> None:
    factory = ShardSinkFactory(tmp_path)
    sink = factory(_context(1))
    for record in _mix(50):
        sink.add(record)
    ran = sink.close()
    rebuilt = factory.recover(_context(1))
    assert ran.models is not None
    assert rebuilt.models is not None
    assert sorted(rebuilt.models) == ["fast", "slow"]
    for name, aggregator in ran.models.items():
        assert rebuilt.models[name].snapshot().outcomes == aggregator.snapshot().outcomes


def test_a_run_of_one_model_writes_report_json_and_summary_csv_as_before() -> None:
    report = _report(_step([_completed(i, 5, None) for i in range(20)]))
    written = json.loads(report.model_dump_json())
    assert "models" not in written["steps"][0]
    assert "models" not in written["totals"]
    assert summary_csv(report).splitlines()[0].split(",") == list(SUMMARY_COLUMNS)
    console = Console(record=True, width=100, file=io.StringIO())
    render_summary(report, console)
    assert "By model" not in console.export_text()
    assert 'id="models"' not in render_html(report, {})


def test_report_json_keeps_each_model_and_the_totals_add_them_over_steps() -> None:
    slo = Slo(ttft_ms=20)
    report = _report(_step(_mix(100), 0, slo), _step(_mix(60), 1, slo))
    again = Report.model_validate_json(report.model_dump_json())
    assert again == report
    totals = report.totals.models
    assert totals is not None
    assert totals["slow"].outcomes.dispatched == 50 + 30
    assert totals["slow"].errors_by_code[DiagnosticCode.http_status].count == 10 + 6
    assert totals["fast"].good == 50 + 30  # every fast answer met TTFT <= 20 ms
    assert totals["slow"].good == 0
    assert totals["fast"].usable_output_tokens == 4 * 80


def test_the_console_prints_a_row_per_model_with_its_errors() -> None:
    report = _report(_step(_mix(100)))
    console = Console(record=True, width=100, file=io.StringIO())
    render_summary(report, console)
    text = console.export_text()
    assert "By model" in text
    rows = {line.split()[0]: line.split() for line in text.splitlines() if line.strip()}
    assert rows["fast"][1:4] == ["50", "50", "0"]
    assert rows["slow"][1:4] == ["50", "40", "10"]
    assert "slow: errors by code: http_status 10" in text


def test_a_run_of_several_steps_shows_each_models_totals_in_the_console_and_the_page() -> None:
    report = _report(_step(_mix(100)), _step(_mix(60), 1))
    console = Console(record=True, width=100, file=io.StringIO())
    render_summary(report, console)
    text = console.export_text()
    assert "slow over the run: 80 dispatched, 64 completed, 16 errored (20.00 %)" in text
    assert "step 2, slow: errors by code: http_status 6" in text
    page = render_html(report, {})
    assert page.count('<table class="models">') == 2  # one per step
    assert '<table class="models-totals">' in page
    assert 'id="models-ttft"' in page


def test_summary_csv_has_a_row_per_model_after_its_step() -> None:
    report = _report(_step(_mix(100)), _step(_mix(40), 1))
    rows = list(csv.DictReader(io.StringIO(summary_csv(report))))
    assert [(row["step"], row["model"]) for row in rows] == [
        ("0", ""), ("0", "fast"), ("0", "slow"), ("1", ""), ("1", "fast"), ("1", "slow"),
    ]  # fmt: skip
    assert (rows[2]["dispatched"], rows[2]["errored"]) == ("50", "10")
    assert float(rows[1]["ttft_p50_ms"]) < 6 < 49 < float(rows[2]["ttft_p50_ms"])
    assert rows[1]["scheduled"] == ""  # the schedule's counts are the step's


def test_compare_judges_each_model_against_its_own_samples() -> None:
    before = _report(_step(_mix(400)))
    slower = [
        _completed(i, 90, "slow") if record.model == "slow" and record.outcome.status == "completed"
        else record
        for i, record in enumerate(_mix(400))
    ]  # fmt: skip
    after = _report(_step(slower))
    groups, _ = align_steps([before, after])
    by_model = dict(model_groups(groups[0]))
    assert sorted(by_model) == ["fast", "slow"]
    verdicts = {
        name: {row.label: row.changes[0].verdict for row in compare_step(seen.steps)}
        for name, seen in by_model.items()
    }
    assert verdicts["slow"]["TTFT p50"] == "worse"
    assert verdicts["fast"]["TTFT p50"] == "~"


def test_assay_compare_prints_each_model_of_two_mixed_runs(tmp_path: Path) -> None:
    """The console and the --html page compare each model of the two runs' mixes."""
    from assay.reports import write_report

    for name, slow_ms in (("one", 50.0), ("two", 90.0)):
        records = [
            _completed(i, slow_ms if i % 2 else 5, "slow" if i % 2 else "fast") for i in range(400)
        ]
        write_report(_report(_step(records)), tmp_path / name)
    page = tmp_path / "compare.html"
    result = run_assay("compare", tmp_path / "one", tmp_path / "two", "--html", page)
    assert result.exit_code == 0, result.stderr
    assert "· model slow</td><td>TTFT p50 (ms)" in page.read_text()
    assert "model fast" in result.stdout
    after = result.stdout.split("model slow")[1]
    ttft_row = next(line for line in after.splitlines() if line.strip().startswith("TTFT p50"))
    assert "worse" in ttft_row


def test_processes_merge_their_models_into_the_step(tmp_path: Path) -> None:
    # Nothing listens at the plan's target: every request errors fast (connect_error), and the
    # sinks of both load processes stamp each record with a model of the mix.
    work = two_process_plan(Constraints(max_requests=40))
    with start_load_processes(2) as started:
        result = run_benchmark(work, MixedSinks(tmp_path), started=started)
    step = step_report(result.steps[0])
    assert step.models is not None
    assert sorted(step.models) == sorted(MODELS)
    assert sum(m.outcomes.dispatched for m in step.models.values()) == 40
    assert {summary.process for summary in result.steps[0].sink_results} == {0, 1}
    for shard in (summary.shard for summary in result.steps[0].sink_results):
        for line in shard.read_bytes().splitlines():
            record = orjson.loads(line)
            assert record["model"] == model_of(record["id"])
    counts = {name: m.outcomes.errored for name, m in step.models.items()}
    assert counts == {
        name: sum(
            1
            for summary in result.steps[0].sink_results
            for line in summary.shard.read_bytes().splitlines()
            if orjson.loads(line)["model"] == name
        )
        for name in MODELS
    }


@pytest.fixture(scope="module")
def stamped_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A run against the embedded mock whose records are each stamped with a model of the mix,
    as a mixed run writes them (its report.json as the run wrote it)."""
    run = tmp_path_factory.mktemp("mixed") / "run"
    ran = run_fast(run, "--max-requests", "60", "--concurrency", "4", "--processes", "2")
    assert ran.exit_code == 0, ran.stderr
    stamped = b"".join(
        orjson.dumps({**line, "model": model_of(line["id"])}) + b"\n"
        for line in read_record_lines(run)
    )
    (run / "records.jsonl").write_bytes(stamped)
    return run


def test_a_killed_runs_shards_are_reported_per_model(tmp_path: Path, stamped_run: Path) -> None:
    shards = tmp_path / "shards"
    shards.mkdir()
    (shards / shard_name(0, 0)).write_bytes((stamped_run / "records.jsonl").read_bytes())
    result = run_assay("report", tmp_path)
    assert result.exit_code == 0, result.stdout + result.stderr
    step = read_report(tmp_path).steps[0]
    assert step.models is not None
    written = Counter(model_of(line["id"]) for line in read_record_lines(tmp_path))
    assert {name: m.outcomes.dispatched for name, m in step.models.items()} == dict(written)


def test_a_real_run_stamped_per_model_is_shown_per_model_in_chromium(stamped_run: Path) -> None:
    """A run against the embedded mock, its records stamped with a model each as a mixed run
    writes them, judged again by `assay revalidate`: report.json, summary.csv and report.html
    show each model, and the browser draws the section and its charts."""
    run = stamped_run
    judged = run_assay("revalidate", run, "--max-error-rate", "1")
    assert judged.exit_code == 0, judged.stderr
    out = run / "revalidated"
    step = read_report(out).steps[0]
    assert step.models is not None
    lines = read_record_lines(run)
    for name, metrics in step.models.items():
        mine = [line for line in lines if line["model"] == name]
        assert metrics.outcomes.dispatched == len(mine)
        assert metrics.outcomes.completed == sum(line["status"] == "completed" for line in mine)
    assert sum(m.outcomes.dispatched for m in step.models.values()) == 60
    summary = (out / "summary.csv").read_text()
    csv_models = [row["model"] for row in csv.DictReader(io.StringIO(summary))]
    assert csv_models == ["", *sorted(step.models)]
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=chromium_path(), args=list(CHROMIUM_ARGS)
        )
        try:
            page = browser.new_page()
            page.goto((out / "report.html").resolve().as_uri())
            section = page.locator("#models")
            assert section.is_visible()
            rows = section.locator("table.models tbody tr").all_inner_texts()
            page.wait_for_selector("#models-ttft svg.main-svg")
            bars = page.locator("#models-ttft .barlayer .point").count()
        finally:
            browser.close()
    shown = {row.split("\t")[0]: row.split("\t") for row in rows}
    assert sorted(shown) == sorted(step.models)
    for name, cells in shown.items():
        assert cells[1] == f"{step.models[name].outcomes.dispatched:,}"
    assert bars == 2 * len(step.models)  # p50 and p99 of each model
