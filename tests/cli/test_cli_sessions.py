"""Multi-turn sessions through `assay run`: turn k+1 carries the answers the server really gave
(checked on the wire), an errored turn ends its session with the rest counted as not sent, and
the report holds metrics per turn index."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

import orjson
from tests.cli.cli_harness import (
    assert_every_request_accounted,
    read_record_lines,
    read_report,
    run_fast,
)
from tests.cli.wire import bodies_by_id

CONCURRENT = ("--profile", "concurrent", "--concurrency", "3")


def answers_by_id(run_dir: Path) -> dict[str, str]:
    return {
        line["id"]: line["response"]["text"]
        for line in read_record_lines(run_dir)
        if line["status"] == "completed"
    }


def test_second_turn_carries_the_first_answer_actually_received(tmp_path: Path) -> None:
    wire = tmp_path / "wire.jsonl"
    run_dir = tmp_path / "run"
    result = run_fast(
        run_dir, *CONCURRENT, "--turns", "3", "--max-requests", "4", "--processes", "2",
        "--mock-fault", "http_500=0", "--mock-record-requests", wire,
    )  # fmt: skip
    assert result.exit_code == 0, result.stdout + result.stderr
    bodies = bodies_by_id(wire)
    answers = answers_by_id(run_dir)
    assert len(bodies) == 12
    for session in range(4):
        first = bodies[f"req-{session:08d}-turn-01"]["messages"]
        second = bodies[f"req-{session:08d}-turn-02"]["messages"]
        third = bodies[f"req-{session:08d}-turn-03"]["messages"]
        assert len(first) == 1
        assert second[:1] == first
        assert second[1] == {
            "role": "assistant",
            "content": answers[f"req-{session:08d}-turn-01"],
        }
        assert second[2]["role"] == "user"
        assert third[:3] == second
        assert third[3]["content"] == answers[f"req-{session:08d}-turn-02"]
    report = read_report(run_dir)
    step = report.steps[0]
    assert step.sessions is not None
    assert (step.sessions.started, step.sessions.completed, step.sessions.turns_not_sent) == (
        4,
        4,
        0,
    )
    assert step.turns is not None
    assert sorted(step.turns) == [1, 2, 3]
    assert all(m.outcomes.completed == 4 for m in step.turns.values())
    assert "turn 2: 4 sent, 4 completed" in result.stdout


def test_sharegpt_multi_turn_sends_received_answers_never_recorded_ones(tmp_path: Path) -> None:
    recorded = "RECORDED ANSWER THAT MUST NOT BE SENT"
    data = tmp_path / "sharegpt.json"
    conversation = [
        {"from": "system", "value": "Be brief."},
        {"from": "human", "value": "What is a queue?"},
        {"from": "gpt", "value": recorded},
        {"from": "human", "value": "And a stack?"},
        {"from": "gpt", "value": recorded},
    ]
    data.write_bytes(orjson.dumps([{"conversations": conversation}]))
    wire = tmp_path / "wire.jsonl"
    run_dir = tmp_path / "run"
    result = run_fast(
        run_dir, *CONCURRENT, "--data", data, "--multi-turn", "--processes", "1",
        "--mock-fault", "http_500=0", "--mock-record-requests", wire,
    )  # fmt: skip
    assert result.exit_code == 0, result.stdout + result.stderr
    bodies = bodies_by_id(wire)
    second = bodies["req-00000000-turn-02"]["messages"]
    assert second == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "What is a queue?"},
        {"role": "assistant", "content": answers_by_id(run_dir)["req-00000000-turn-01"]},
        {"role": "user", "content": "And a stack?"},
    ]
    assert recorded not in orjson.dumps(bodies).decode()


def test_an_errored_turn_ends_its_session_and_the_rest_are_counted_not_sent(
    tmp_path: Path,
) -> None:
    run_dir = tmp_path / "run"
    sessions, turns = 30, 4
    result = run_fast(
        run_dir, "--profile", "constant", "--rate", "200", "--turns", str(turns),
        "--max-requests", str(sessions), "--processes", "2", "--mock-fault", "http_500=0.25",
        "--max-error-rate", "1",
    )  # fmt: skip
    assert result.exit_code == 0, result.stdout + result.stderr
    report = assert_every_request_accounted(run_dir)
    by_session: dict[str, dict[int, str]] = defaultdict(dict)
    for line in read_record_lines(run_dir):
        # The record carries its turn, the same turn its id names.
        turn = line["turn"]
        session, _, turn_in_id = line["id"].rpartition("-turn-")
        assert turn == int(turn_in_id)
        by_session[session][turn] = line["status"]
    expected_not_sent = 0
    for statuses in by_session.values():
        sent = sorted(statuses)
        assert sent == list(range(1, len(sent) + 1))  # turns in order, none skipped
        # Every turn but the last sent completed; a session stops at its first error.
        assert all(statuses[t] == "completed" for t in sent[:-1])
        if len(sent) < turns:
            assert statuses[sent[-1]] == "errored"
        expected_not_sent += turns - len(sent)
    step = report.steps[0]
    assert step.sessions is not None
    summary: Any = step.sessions
    assert summary.started == len(by_session) == sessions
    assert summary.turns_sent == report.totals.outcomes.dispatched
    assert summary.turns_not_sent == expected_not_sent > 0
    assert summary.turns_sent + summary.turns_not_sent == sessions * turns
    assert step.turns is not None
    assert sum(m.outcomes.dispatched for m in step.turns.values()) == summary.turns_sent
    assert f"not sent {expected_not_sent}" in result.stdout


def test_multi_turn_rows_without_turns_name_the_line(tmp_path: Path) -> None:
    data = tmp_path / "p.jsonl"
    data.write_text('{"turns": ["a", "b"]}\n{"prompt": "c"}\n', encoding="utf-8")
    result = run_fast(tmp_path / "run", "--data", data, "--multi-turn")
    assert result.exit_code == 2, result.stdout + result.stderr
    assert f"{data}, line 2: no turns for a multi-turn session" in result.stderr


def test_session_flags_without_their_data_are_usage_errors(tmp_path: Path) -> None:
    data = tmp_path / "p.jsonl"
    data.write_text('{"prompt": "c"}\n', encoding="utf-8")
    cases = [
        (("--multi-turn",), "--multi-turn runs the conversations of --data"),
        (("--turns", "3", "--data", str(data)), "with --data use --multi-turn"),
        (("--think-time-ms", "5"), "--think-time-ms is the pause between the turns"),
    ]
    for flags, words in cases:
        result = run_fast(tmp_path / "run", *flags)
        assert result.exit_code == 2, result.stdout + result.stderr
        assert words in result.stderr
        assert "Traceback" not in result.stderr
