"""`assay compare`: step-by-step changes against the first run, with noise judged from sample
sizes, and a refusal to compare runs of different workloads (issue 12)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from pydantic import JsonValue

from assay.core import Endpoint, GenerationResponse, ResponseTiming, TextAnswer, TokenSource, Usage
from assay.metrics import StepAggregator
from assay.records import Completed, RequestRecord
from assay.reports import Report, StepReport, build_report, collect_environment, write_report
from assay.reports.compare import Row, align_steps, compare_step, workload_differences
from assay.reports.compare_html import write_compare_html
from assay.spec.run import RunEcho
from tests.cli.cli_harness import run_assay

MS = 1_000_000
NOW = datetime(2026, 12, 2, 9, 0, tzinfo=UTC)


def _record(i: int, spacing_ms: float, ttft_ms: int) -> RequestRecord[GenerationResponse]:
    send = round(i * spacing_ms * MS)
    first = send + ttft_ms * MS + (i % 5) * MS
    times = tuple(first + k * 10 * MS for k in range(4))
    return RequestRecord[GenerationResponse](
        request_id=f"r{i}",
        targeted_start_ns=send,
        dispatched_ns=send,
        finished_ns=times[-1],
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


def _report(
    requests: int, seconds: float, ttft_ms: int, run_config: dict[str, JsonValue] | None = None
) -> Report:
    aggregator = StepAggregator()
    for i in range(requests):
        aggregator.add(_record(i, seconds * 1000 / requests, ttft_ms))
    step = StepReport.of(0, "constant", aggregator.snapshot(), requested_rate=requests / seconds)
    config: dict[str, JsonValue] = {"endpoint": "chat", "profile": "constant"}
    if run_config is not None:
        config = run_config
    return build_report(
        run_config=RunEcho.model_validate(config),
        steps=[step],
        started_at=NOW,
        finished_at=NOW,
        max_error_rate=0.05,
        environment=collect_environment(include_hostname=False),
    )


def _row(rows: list[Row], label: str) -> Row:
    return next(row for row in rows if row.label == label)


def test_large_samples_mark_a_real_change_better_or_worse() -> None:
    base, other = _report(2000, 10.0, 50), _report(2600, 10.0, 80)
    rows = compare_step([base.steps[0], other.steps[0]])
    assert _row(rows, "usable req/s").changes[0].verdict == "better"
    assert _row(rows, "TTFT p50").changes[0].verdict == "worse"
    assert _row(rows, "attempted req/s").changes[0].verdict == ""  # describes the load only


def test_small_samples_call_the_same_difference_noise() -> None:
    # 10 requests each: a 30 % rate change and a 5 ms TTFT shift are within the noise (a p99
    # needs about 400 samples before it can be bounded).
    base, other = _report(10, 2.0, 50), _report(13, 2.0, 55)
    rows = compare_step([base.steps[0], other.steps[0]])
    assert _row(rows, "usable req/s").changes[0].verdict == "~"
    assert _row(rows, "TTFT p99").changes[0].verdict == "~"


def test_workloads_that_differ_are_named() -> None:
    chat = _report(10, 2.0, 50, {"endpoint": "chat", "profile": "constant"})
    other = _report(10, 2.0, 50, {"endpoint": "completions", "profile": "sweep"})
    assert workload_differences([chat, other]) == [
        "endpoint: 'chat' (run 1) vs 'completions' (run 2)",
        "profile: 'constant' (run 1) vs 'sweep' (run 2)",
    ]


def test_compare_prints_a_table_per_step_with_marked_changes(tmp_path: Path) -> None:
    write_report(_report(2000, 10.0, 50), tmp_path / "a")
    write_report(_report(2000, 10.0, 80), tmp_path / "b")
    result = run_assay("compare", tmp_path / "a", tmp_path / "b")
    assert result.exit_code == 0, result.stderr
    assert "Step 1: constant at 200 req/s\n" in result.stdout  # one load: said once
    (ttft,) = [line for line in result.stdout.splitlines() if "TTFT p50" in line]
    assert "+57.8 % worse" in ttft
    assert "~ = within the run-to-run noise" in result.stdout


def test_steps_of_different_loads_are_shown_side_by_side_not_judged(tmp_path: Path) -> None:
    # Issue 20 item 5: 16.6 vs 14.6 req/s were compared as if the same load.
    write_report(_report(2000, 10.0, 50), tmp_path / "a")
    write_report(_report(2600, 10.0, 80), tmp_path / "b")
    result = run_assay("compare", tmp_path / "a", tmp_path / "b")
    assert result.exit_code == 0, result.stderr
    assert (
        "Step 1: constant at 200 req/s; run 2: constant at 260 req/s (loads differ: not judged)"
        in result.stdout
    )
    (usable,) = [line for line in result.stdout.splitlines() if "usable req/s" in line]
    assert usable.rstrip().endswith("+29.6 %")  # shown, not called better
    assert "better" not in result.stdout
    assert "worse" not in result.stdout


def _sweep(*rates: float) -> Report:
    steps = [StepReport.of(0, "synchronous", _report(20, 10.0, 50).steps[0].metrics)]
    steps += [
        StepReport.of(index, "constant", _report(20, 10.0, 50).steps[0].metrics, requested_rate=r)
        for index, r in enumerate(rates, start=1)
    ]
    return build_report(
        run_config=RunEcho.model_validate({"profile": "sweep"}),
        steps=steps,
        started_at=NOW,
        finished_at=NOW,
        max_error_rate=0.05,
    )


def test_sweeps_align_by_offered_load_and_name_the_steps_left_over() -> None:
    groups, notes = align_steps([_sweep(10.0, 16.6), _sweep(16.6, 14.6, 20.0)])
    pairs = [
        (group.baseline.index, None if group.steps[1] is None else group.steps[1].index)
        for group in groups
    ]
    assert pairs == [(0, 0), (1, 2), (2, 1)]  # 16.6/s lines up with 16.6/s, not with step 3
    assert [group.same_load for group in groups] == [True, False, True]
    assert notes == ["run 2's step 4 (constant at 20 req/s) has no step of its load in run 1"]
    rows = compare_step(groups[1].steps, judged=groups[1].same_load)
    assert {change.verdict for row in rows for change in row.changes} == {""}


def test_the_compare_page_labels_both_loads_and_shows_error_rates_in_percent(
    tmp_path: Path,
) -> None:
    page = tmp_path / "compare.html"
    write_compare_html(page, [_sweep(10.0, 16.6), _sweep(16.6, 14.6)], ["a", "b"])
    text = page.read_text(encoding="utf-8")
    assert "2 constant 10/s | run 2: 3 constant 14.6/s" in text
    assert "error rate (%)" in text
    assert "error rate (fraction)" not in text


def test_compare_refuses_runs_of_different_workloads_unless_forced(tmp_path: Path) -> None:
    write_report(_report(10, 2.0, 50), tmp_path / "chat")
    write_report(
        _report(10, 2.0, 50, {"endpoint": "embeddings", "profile": "constant"}), tmp_path / "emb"
    )
    refused = run_assay("compare", tmp_path / "chat", tmp_path / "emb")
    assert refused.exit_code == 2
    assert refused.stderr.startswith("error: the runs' workloads differ")
    assert "endpoint: 'chat' (run 1) vs 'embeddings' (run 2)" in refused.stderr
    assert "--force" in refused.stderr
    forced = run_assay("compare", "--force", tmp_path / "chat", tmp_path / "emb")
    assert forced.exit_code == 0, forced.stderr
    assert "warning: workloads differ: endpoint" in forced.stdout


def test_compare_of_a_directory_without_a_report_is_one_error_line(tmp_path: Path) -> None:
    write_report(_report(10, 2.0, 50), tmp_path / "a")
    (tmp_path / "empty").mkdir()
    result = run_assay("compare", tmp_path / "a", tmp_path / "empty")
    assert result.exit_code == 2
    assert result.stderr.count("\n") == 1
    assert "report.json: no such file" in result.stderr


def _with_errors(report: Report, errored: int) -> StepReport:
    step = report.steps[0]
    outcomes = step.metrics.outcomes.model_copy(
        update={"errored": errored, "dispatched": step.metrics.outcomes.dispatched + errored}
    )
    metrics = step.metrics.model_copy(
        update={"outcomes": outcomes, "error_rate": outcomes.error_rate}
    )
    return step.model_copy(update={"metrics": metrics})


def test_error_rate_change_counts_only_beyond_the_pooled_proportions_noise() -> None:
    small = _report(100, 2.0, 50)
    few = compare_step([_with_errors(small, 2), _with_errors(small, 4)])
    assert _row(few, "error rate").changes[0].verdict == "~"
    large = _report(10_000, 10.0, 50)
    many = compare_step([_with_errors(large, 20), _with_errors(large, 60)])
    assert _row(many, "error rate").changes[0].verdict == "worse"
