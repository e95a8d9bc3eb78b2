"""`assay mock` says at start-up which faults it injects and how it answers, and that the
embedded mock of `assay run` answers otherwise (issue 20 item 8)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import urllib.request

from tests.cli.cli_harness import ASSAY, assay_env, assay_mock


def first_lines(*args: str, count: int = 3) -> list[str]:
    process = subprocess.Popen(
        [str(ASSAY), "mock", "--port", "0", *args],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=assay_env(),
        start_new_session=True,
    )
    try:
        assert process.stdout is not None
        return [process.stdout.readline().strip() for _ in range(count)]
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        process.communicate(timeout=30)  # reads the pipes to their end and closes them


def test_the_mock_lists_its_faults_and_its_defaults_at_start_up() -> None:
    ready, faults, answers = first_lines("--fault", "http_500=0.1", "--fault", "drop=0.02")
    assert " at http://127.0.0.1:" in ready
    assert faults.startswith("faults: http_500=0.1, drop=0.02 ")
    assert answers.startswith("answers: TTFT 0 ms, ITL 0 ms, 16 output tokens")
    assert "the embedded mock of `assay run` uses TTFT 40 ms, ITL 8 ms" in answers


def test_a_mock_without_faults_says_none() -> None:
    _, faults, _ = first_lines()
    assert faults.startswith("faults: none ")


def test_max_model_len_is_listed_at_v1_models_as_vllm_lists_it() -> None:
    with (
        assay_mock("--max-model-len", "4096") as url,
        urllib.request.urlopen(f"{url}/v1/models", timeout=10) as answer,
    ):
        listed = json.loads(answer.read())
    assert listed["data"][0]["max_model_len"] == 4096


def test_a_mock_with_a_gpu_shows_its_dcgm_series_at_metrics() -> None:
    """`assay mock --gpu-watts 250`: /metrics carries the power gauge and an energy counter
    that grows at that power (two scrapes a moment apart never go back)."""
    with assay_mock("--gpu-watts", "250") as url:
        pages = []
        for _ in range(2):
            with urllib.request.urlopen(f"{url}/metrics", timeout=10) as answer:
                pages.append(answer.read().decode())
    series = [
        {
            line.split("{")[0]: float(line.rsplit(" ", 1)[1])
            for line in page.splitlines()
            if line.startswith("DCGM_")
        }
        for page in pages
    ]
    assert series[0]["DCGM_FI_DEV_POWER_USAGE"] == 250.0
    energy = [one["DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"] for one in series]
    assert 0 < energy[0] <= energy[1]


def test_a_gpu_of_no_power_is_one_error_line() -> None:
    refused = subprocess.run(
        [str(ASSAY), "mock", "--port", "0", "--gpu-watts", "-5"],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        env=assay_env(),
        timeout=60,
        check=False,
    )
    assert refused.returncode == 2
    assert refused.stderr.count("error:") == 1
    assert "Traceback" not in refused.stderr
