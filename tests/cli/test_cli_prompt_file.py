"""`assay run --data FILE`: every prompt of a JSONL or CSV file is sent once, and the file alone
bounds the run."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.cli.cli_harness import assert_every_request_accounted, read_record_lines, run_fast

PROMPT_FILES = {
    "prompts.jsonl": (
        '{"prompt": "Summarise the attached incident report in two sentences."}\n'
        '{"prompt": "Translate \\"the queue is full\\" into French."}\n'
        "\n"
        '{"prompt": "Write a haiku about load balancers."}\n'
    ),
    "prompts.csv": (
        "prompt\n"
        "What is the capital of Norway?\n"
        '"Explain TCP slow start, briefly, with one example."\n'
        "List three causes of tail latency.\n"
    ),
}


@pytest.mark.parametrize("name", sorted(PROMPT_FILES))
def test_every_prompt_of_the_file_is_sent_once(tmp_path: Path, name: str) -> None:
    data = tmp_path / name
    data.write_text(PROMPT_FILES[name], encoding="utf-8")
    run_dir = tmp_path / "run"
    # No --max-requests or --max-seconds: the three prompts are the whole run.
    result = run_fast(
        run_dir, "--data", data, "--profile", "concurrent", "--concurrency", "2",
        "--processes", "1", "--mock-fault", "http_500=0",
    )  # fmt: skip
    assert result.exit_code == 0, result.stdout + result.stderr
    report = assert_every_request_accounted(run_dir)
    assert report.totals.outcomes.dispatched == 3
    assert report.totals.outcomes.completed == 3
    assert sorted(line["id"] for line in read_record_lines(run_dir)) == [
        "req-00000000",
        "req-00000001",
        "req-00000002",
    ]
