"""Every number a flag or a stored report can hold is finite and in range (issue 37, item 9):
`--think-time-ms inf`, `--context-window 10^30` and a report.json count of -10^30 ended in an
internal error (exit 3); each is now one `error:` line, exit code 2."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from tests.cli.cli_harness import run_assay, run_fast
from tests.cli.test_cli_bad_input import assert_one_error_line

from assay.cli.run_flags import RUN_FLAGS, Flag

# What a float flag needs beside it to be read at all (the profile it belongs to).
_CONTEXT: dict[str, tuple[str, ...]] = {
    "rate": ("--profile", "constant"),
    "burstiness": ("--profile", "poisson", "--rate", "5"),
    "ramp_up_start_rate": ("--ramp-up", "linear", "--ramp-up-end-rate", "5"),
    "ramp_up_end_rate": ("--ramp-up", "linear", "--ramp-up-start-rate", "5"),
    "replay_speed": ("--profile", "replay", "--trace", "{trace}"),
    "think_time_ms": ("--turns", "2"),
    **dict.fromkeys(
        (
            "capacity_start",
            "capacity_growth",
            "capacity_confidence",
            "capacity_step_s",
            "capacity_budget_s",
        ),
        ("--profile", "capacity", "--slo", "ttft_ms=500"),
    ),
}
FLOAT_FLAGS = [row for row in RUN_FLAGS if row.kind is float and row.key is not None]


def test_the_float_flags_are_all_known_here() -> None:
    assert len(FLOAT_FLAGS) >= 20
    assert {"think_time_ms", "temperature", "top_p", "burstiness"} <= {
        row.key for row in FLOAT_FLAGS
    }


@pytest.mark.parametrize("value", ["inf", "nan"])
@pytest.mark.parametrize("flag", FLOAT_FLAGS, ids=lambda row: str(row.key))
def test_every_float_flag_refuses_a_number_that_is_not_finite(
    tmp_path: Path, flag: Flag, value: str
) -> None:
    key = str(flag.key)
    trace = tmp_path / "trace.jsonl"
    trace.write_text('{"timestamp": 0, "input_length": 8, "output_length": 4}\n')
    context = [part.replace("{trace}", str(trace)) for part in _CONTEXT.get(key, ())]
    spelled = "--" + key.replace("_", "-")
    result = run_assay(
        "run", "--output-dir", tmp_path / "run", "--max-requests", "1", *context, spelled, value
    )
    line = assert_one_error_line(result, spelled)
    assert any(word in line for word in ("finite", "less than", "greater than")), line


def test_a_context_window_of_ten_to_the_thirty_is_refused(tmp_path: Path) -> None:
    result = run_fast(tmp_path / "run", "--context-window", "1" + "0" * 30)
    assert_one_error_line(result, "--context-window", "4294967296")


@pytest.mark.parametrize(
    ("place", "value"),
    [
        (("totals", "outcomes", "completed"), -(10**30)),
        (("steps", 0, "metrics", "outcomes", "completed"), -(10**30)),
        (("steps", 0, "metrics", "throughput", "peak_output_tokens_per_s"), 10**30),
    ],
)
def test_a_stored_count_beyond_64_bits_is_refused_by_assay_report(
    tmp_path: Path, place: tuple[str | int, ...], value: int
) -> None:
    run = tmp_path / "run"
    assert run_fast(run, "--max-requests", "2").exit_code == 0
    (run / "report.html").unlink()
    report = orjson.loads((run / "report.json").read_bytes())
    holder = report
    for part in place[:-1]:
        holder = holder[part]
    holder[place[-1]] = str(value)  # orjson writes no integer beyond 64 bits: spliced in below
    text = orjson.dumps(report).replace(f'"{value}"'.encode(), str(value).encode())
    (run / "report.json").write_bytes(text)
    result = run_assay("report", run)
    assert_one_error_line(result, "report.json is not an assay report", "beyond 64 bits")
    assert not (run / "report.html").exists()


@pytest.mark.parametrize(
    "flags",
    [
        ("--max-requests", "1" + "0" * 30),
        ("--seed", "1" + "0" * 30),
        ("--request-seed", "-1" + "0" * 30),
        ("--max-errors", "1" + "0" * 30),
        ("--max-response-bytes", "1" + "0" * 30),
    ],
    ids=lambda flags: flags[0],
)
def test_a_whole_number_beyond_64_bits_is_refused_before_the_run(
    tmp_path: Path, flags: tuple[str, str]
) -> None:
    # Each ran to its end, then crashed writing report.json (orjson stops at 64 bits).
    result = run_fast(tmp_path / "run", "--max-seconds", "1", *flags)
    assert_one_error_line(result, f"{flags[0]} {flags[1]}", "beyond 64 bits")
    assert not (tmp_path / "run").exists()


def test_ray_workers_beyond_any_cluster_are_refused_before_ray_starts(tmp_path: Path) -> None:
    result = run_fast(tmp_path / "run", "--engine", "ray", "--ray-workers", "100000")
    assert_one_error_line(result, "--ray-workers 100000", "at most 65,536")
