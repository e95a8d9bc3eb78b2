"""`assay run --model a=0.7,b=0.2,c=0.1` (issue 39, traffic mixes) as a newcomer runs it: every
record names the model its request was sent to, the same one in every load process; a model the
server does not serve stops the run before any load; a single-model run writes no model."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from tests.cli.cli_harness import (
    assay_mock,
    assert_every_request_accounted,
    read_record_lines,
    run_assay,
    run_fast,
)

from assay.data.source import request_id
from assay.spec.model_mix import ModelMix


def _expected_models(lines: list[dict[str, object]], mix: ModelMix, seed: int) -> list[str]:
    index_of = {request_id(index): index for index in range(10_000)}
    return [mix.pick(seed, index_of[str(line["id"])]) for line in lines]


def test_a_weighted_mix_stamps_every_record_with_its_seeded_model(tmp_path: Path) -> None:
    run_dir = tmp_path / "mix"
    result = run_fast(
        run_dir,
        "--model",
        "a=0.7,b=0.2,c=0.1",
        "--max-requests",
        "200",
        "--processes",
        "2",
        "--seed",
        "9",
    )
    assert result.exit_code == 0, result.stdout + result.stderr
    assert "model: mix of a 70 %, b 20 %, c 10 % (random, seeded by --seed)" in result.stdout
    assert_every_request_accounted(run_dir)
    lines = read_record_lines(run_dir)
    models = [str(line["model"]) for line in lines]
    # Both processes picked each request's model from (seed, index) alone.
    assert models == _expected_models(lines, ModelMix.of("a=0.7,b=0.2,c=0.1"), 9)
    assert set(Counter(models)) == {"a", "b", "c"}
    echo = json.loads((run_dir / "report.json").read_bytes())["run_config"]
    assert (echo["model"], echo["model_mix"]) == ("a=0.7,b=0.2,c=0.1", "random")


def test_a_round_robin_mix_from_a_config_file_cycles_its_pattern(tmp_path: Path) -> None:
    run_dir = tmp_path / "rr"
    config = tmp_path / "assay.toml"
    config.write_text('model-mix = "round-robin"\n[model]\nbig = 2\nsmall = 1\n', encoding="utf-8")
    result = run_fast(
        run_dir, "--config", config, "--max-requests", "30", "--profile", "synchronous"
    )
    assert result.exit_code == 0, result.stdout + result.stderr
    lines = sorted(read_record_lines(run_dir), key=lambda line: str(line["id"]))
    assert [line["model"] for line in lines] == ["big", "big", "small"] * 10


def test_a_model_the_server_does_not_serve_stops_the_run_before_load(tmp_path: Path) -> None:
    with assay_mock("--ttft-ms", "0", "--itl-ms", "0") as url:
        result = run_assay(
            "run",
            "--target",
            url,
            "--model",
            "assay-mock=0.5,lora-missing=0.5",
            "--max-requests",
            "5",
            "--output-dir",
            tmp_path / "refused",
        )
    assert result.exit_code == 2, result.stdout + result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert errors == [
        f"error: model of --model not served at {url}: 'lora-missing'; it serves: 'assay-mock'"
    ]
    assert not (tmp_path / "refused" / "records.jsonl").exists()


@pytest.mark.parametrize(
    ("flags", "says"),
    [
        (("--model", "a=0.7,a=0.3"), "error: --model: model 'a' is named twice in 'a=0.7,a=0.3'"),
        (("--model", "a=-1,b=2"), "error: --model: model 'a': weight '-1' must be a finite"),
        (("--model", "a=0,b=0"), "error: --model: 'a=0,b=0': the weights sum to zero"),
        (("--model", "a,,b"), "error: --model: 'a,,b' has an empty model name"),
        (("--model", "a,b", "--model-mix", "sideways"), "error: --model-mix: Input should be"),
        (("--model", "m", "--model-mix", "round-robin"), "error: --model-mix picks among"),
    ],
)
def test_a_bad_mix_is_one_error_line(tmp_path: Path, flags: tuple[str, ...], says: str) -> None:
    result = run_fast(tmp_path / "bad", *flags, "--max-requests", "3")
    assert result.exit_code == 2, result.stdout + result.stderr
    errors = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(errors) == 1, result.stderr
    assert errors[0].startswith(says), result.stderr
    assert "Traceback" not in result.stderr


def test_a_single_model_run_writes_no_model_in_its_records(tmp_path: Path) -> None:
    run_dir = tmp_path / "single"
    result = run_fast(run_dir, "--model", "assay-mock", "--max-requests", "20")
    assert result.exit_code == 0, result.stdout + result.stderr
    lines = read_record_lines(run_dir)
    assert len(lines) == 20
    assert all("model" not in line for line in lines)
    echo = json.loads((run_dir / "report.json").read_bytes())["run_config"]
    assert echo["model"] == "assay-mock"


def test_a_data_files_model_column_names_each_requests_model(tmp_path: Path) -> None:
    data = tmp_path / "rows.jsonl"
    data.write_text(
        "".join(
            json.dumps({"prompt": f"say {n}", **({"model": "lora-a"} if n % 3 == 0 else {})}) + "\n"
            for n in range(12)
        ),
        encoding="utf-8",
    )
    run_dir = tmp_path / "column"
    # The embedded mock answers any model name: the rows' adapters are sent as named.
    result = run_fast(run_dir, "--model", "base", "--data", data, "--profile", "synchronous")
    assert result.exit_code == 0, result.stdout + result.stderr
    lines = sorted(read_record_lines(run_dir), key=lambda line: str(line["id"]))
    assert [line["model"] for line in lines] == [
        "lora-a" if n % 3 == 0 else "base" for n in range(12)
    ]
