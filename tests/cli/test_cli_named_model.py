"""`assay run --model NAME` with one model the server does not list stops before any load, as a
traffic mix naming one does (one rule for both); against the embedded mock the model named is
the one it serves."""

from __future__ import annotations

import json
from pathlib import Path

from tests.cli.cli_harness import assay_mock, assert_every_request_accounted, run_assay, run_fast


def test_one_model_the_server_does_not_list_stops_the_run_before_load(tmp_path: Path) -> None:
    with assay_mock("--ttft-ms", "0", "--itl-ms", "0", "--served-model", "lora-a") as url:
        result = run_assay(
            "run", "--target", url, "--model", "tgi", "--max-requests", "5",
            "--output-dir", tmp_path / "refused",
        )  # fmt: skip
    assert result.exit_code == 2, result.stdout + result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert errors == [
        f"error: model of --model not served at {url}: 'tgi'; it serves: 'assay-mock', 'lora-a'"
    ]
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "refused" / "records.jsonl").exists()


def test_the_embedded_mock_serves_the_one_model_named(tmp_path: Path) -> None:
    run_dir = tmp_path / "named"
    result = run_fast(run_dir, "--model", "my-model", "--max-requests", "6")
    assert result.exit_code == 0, result.stdout + result.stderr
    assert_every_request_accounted(run_dir)
    echo = json.loads((run_dir / "report.json").read_bytes())["run_config"]
    assert echo["model"] == "my-model"
