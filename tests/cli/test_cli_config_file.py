"""`assay run --config FILE`: the file's keys (spelled like the flags) drive the run, and a flag
given on the command line wins over the same key in the file."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from tests.cli.cli_harness import assert_every_request_accounted, read_record_lines, run_assay

from assay.backend import wire_request_id
from assay.mock import FAULTS, choose_fault


def write_toml(path: Path, output_dir: Path) -> Path:
    path.write_text(
        f"""\
# A small, instant run with one injected fault, all from the file.
profile = "concurrent"
concurrency = 3
max-requests = 30
processes = 1
seed = 5
prompt-tokens = "32"
output-tokens = "16"
mock-ttft-ms = 0
mock-itl-ms = 0
max_error_rate = 0.9
output-dir = {json.dumps(str(output_dir))}

[mock-faults]
http_503 = 0.25
""",
        encoding="utf-8",
    )
    return path


def injected(run_dir: Path, seed: int) -> dict[str, int]:
    return dict(
        Counter(
            FAULTS[fault].code.value
            for line in read_record_lines(run_dir)
            if (fault := choose_fault(seed, {"http_503": 0.25}, wire_request_id(line["id"])))
            is not None
        )
    )


def test_config_file_keys_are_honoured(tmp_path: Path) -> None:
    run_dir = tmp_path / "from-file"
    config = write_toml(tmp_path / "assay.toml", run_dir)
    result = run_assay("run", "--config", config)
    assert result.exit_code == 0, result.stdout + result.stderr
    report = assert_every_request_accounted(run_dir)
    (step,) = report.steps
    assert step.profile == "concurrent"
    assert step.requested_concurrency == 3
    assert report.totals.outcomes.dispatched == 30
    assert report.run_config.seed == 5
    assert report.run_config.mock_faults == {"http_503": 0.25}
    assert report.run_config.output_tokens == "16"
    counts = {code.value: s.count for code, s in report.totals.errors_by_code.items()}
    assert counts == injected(run_dir, seed=5)
    assert counts  # the file's fault was injected at all


def test_flags_override_the_config_file(tmp_path: Path) -> None:
    config = write_toml(tmp_path / "assay.toml", tmp_path / "unused")
    run_dir = tmp_path / "from-flags"
    result = run_assay(
        "run", "--config", config, "--max-requests", "12", "--seed", "9",
        "--output-dir", run_dir,
    )  # fmt: skip
    assert result.exit_code == 0, result.stdout + result.stderr
    assert not (tmp_path / "unused").exists()
    report = assert_every_request_accounted(run_dir)
    assert report.totals.outcomes.dispatched == 12
    assert report.run_config["max_requests"] == 12
    assert report.run_config.seed == 9
    assert report.steps[0].requested_concurrency == 3  # still from the file
    counts = {code.value: s.count for code, s in report.totals.errors_by_code.items()}
    assert counts == injected(run_dir, seed=9)
