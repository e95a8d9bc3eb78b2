"""`assay run --profile replay --trace FILE`: requests leave at the trace's times (scaled by
--replay-speed), the step owes the trace as a constant step owes its schedule, and Mooncake hash
blocks become prompt prefixes the server really receives."""

from __future__ import annotations

from pathlib import Path

import orjson
from tests.cli.cli_harness import assert_every_request_accounted, read_record_lines, run_fast
from tests.cli.wire import bodies_by_id

from assay.data import BuiltinTokenizer

TOKENIZER = BuiltinTokenizer()
TIMES_MS = [27000, 27200, 27600, 28000]
LENGTHS = [1100, 1300, 700, 600]
HASH_IDS = [[46, 47, 48], [46, 47, 49], [46, 50], [51, 52]]
TRACE = [
    {"timestamp": ms, "input_length": length, "output_length": 6, "hash_ids": ids}
    for ms, length, ids in zip(TIMES_MS, LENGTHS, HASH_IDS, strict=True)
]
SPEED = 2.0
# How late a request may leave its targeted time on a shared 2-core machine: the targeted times
# themselves are checked exactly, the lag only against this bound.
PACING_TOLERANCE_NS = 200_000_000


def test_replay_sends_at_trace_times_and_hash_blocks_share_prompt_prefixes(
    tmp_path: Path,
) -> None:
    trace = tmp_path / "mooncake.jsonl"
    trace.write_bytes(b"".join(orjson.dumps(row) + b"\n" for row in TRACE))
    wire = tmp_path / "wire.jsonl"
    run_dir = tmp_path / "run"
    result = run_fast(
        run_dir, "--profile", "replay", "--trace", trace, "--replay-speed", str(SPEED),
        "--processes", "2", "--endpoint", "completions", "--mock-fault", "http_500=0",
        "--mock-record-requests", wire,
    )  # fmt: skip
    assert result.exit_code == 0, result.stdout + result.stderr
    report = assert_every_request_accounted(run_dir)
    assert report.totals.outcomes.completed == len(TRACE)
    # An open loop owes its trace (issue 24: a replay step reported no schedule): both slices
    # sent all they owed.
    [step] = report.steps
    assert (step.scheduled, step.not_sent, step.lost) == (len(TRACE), 0, 0)
    assert (report.totals.scheduled, report.totals.not_sent) == (len(TRACE), 0)
    records = {line["id"]: line for line in read_record_lines(run_dir)}
    start_ns = records["req-00000000"]["targeted_start_ns"]
    for index, ms in enumerate(TIMES_MS):
        record = records[f"req-{index:08d}"]
        offset_ns = round((ms - TIMES_MS[0]) * 1_000_000 / SPEED)
        assert record["targeted_start_ns"] - start_ns == offset_ns
        lag_ns = record["dispatched_ns"] - record["targeted_start_ns"]
        assert 0 <= lag_ns < PACING_TOLERANCE_NS, (index, lag_ns)
    prompts = [str(bodies_by_id(wire)[f"req-{i:08d}"]["prompt"]) for i in range(len(TRACE))]
    assert [TOKENIZER.count(p) for p in prompts] == LENGTHS
    pieces = TOKENIZER.pieces(prompts[0])
    two_blocks, one_block = "".join(pieces[:1024]), "".join(pieces[:512])
    assert prompts[1].startswith(two_blocks)  # hash ids 46, 47 shared
    assert prompts[2].startswith(one_block)  # hash id 46 shared
    assert not prompts[2].startswith(two_blocks)
    assert not prompts[3].startswith(one_block)  # no hash id shared


def test_replay_without_a_trace_is_a_usage_error(tmp_path: Path) -> None:
    result = run_fast(tmp_path / "run", "--profile", "replay")
    assert result.exit_code == 2, result.stdout + result.stderr
    assert "profile replay needs a trace (--trace FILE)" in result.stderr
