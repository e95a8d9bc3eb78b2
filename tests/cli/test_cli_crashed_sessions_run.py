"""The report of a multi-turn (sessions) run that crashed holds the per-turn figures a finished
run and `assay revalidate` hold, built from the records it kept by the same aggregation: each
turn index's requests, outcomes and latencies."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from tests.cli.cli_harness import FAST, read_record_lines, read_report
from tests.cli.test_cli_crashed_run import _run_crashing

from assay.benchmark.revalidate import revalidate
from assay.cli.exit_codes import EXIT_CRASH


def test_a_crashed_sessions_run_reports_its_figures_per_turn(tmp_path: Path) -> None:
    run_dir, witness = tmp_path / "run", tmp_path / "shards-at-the-crash"
    result = _run_crashing(
        witness, "run", *FAST, "--profile", "concurrent", "--concurrency", "3",
        "--turns", "3", "--max-requests", "6", "--processes", "2",
        "--mock-fault", "http_500=0.2", "--output-dir", run_dir,
    )  # fmt: skip
    assert result.returncode == EXIT_CRASH, result.stdout + result.stderr
    report = read_report(run_dir)
    assert report.incomplete is not None
    assert report.incomplete.state == "crashed"
    lines = read_record_lines(run_dir)
    by_turn = Counter(line["turn"] for line in lines)
    completed = Counter(line["turn"] for line in lines if line["status"] == "completed")
    assert sorted(by_turn) == [1, 2, 3]
    [step] = report.steps
    assert step.turns is not None
    assert sorted(step.turns) == sorted(by_turn)
    for turn, metrics in step.turns.items():
        assert metrics.outcomes.dispatched == by_turn[turn], turn
        assert metrics.outcomes.completed == completed[turn], turn
        if completed[turn]:
            assert metrics.latency.ttft_ms is not None, turn
    assert sum(m.outcomes.dispatched for m in step.turns.values()) == len(lines)
    assert report.totals.outcomes.dispatched == len(lines)
    # `assay revalidate` builds the same per-turn figures from the same records.
    again = revalidate(run_dir).report.steps[0].turns
    assert again is not None
    assert {turn: m.outcomes for turn, m in again.items()} == {
        turn: m.outcomes for turn, m in step.turns.items()
    }
