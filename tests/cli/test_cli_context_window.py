"""`assay run` refuses, before any load, a request that cannot fit the model's context window the
server names at `/v1/models` (issue 21.1); `--context-window` states or turns off the window."""

from __future__ import annotations

from pathlib import Path

from tests.cli.cli_harness import assay_env
from tests.cli.test_cli_bad_input import assert_one_error_line
from tests.cli.test_cli_secrets import run_assay_async
from tests.conftest import StartMock

from assay.mock import MockConfig

SMALL = ("--processes", "1", "--profile", "synchronous", "--max-requests", "3")


async def test_synthetic_prompts_above_the_listed_window_are_refused_before_any_request(
    tmp_path: Path, start_mock: StartMock
) -> None:
    server = await start_mock(MockConfig(max_model_len=4096))
    result = await run_assay_async(
        "run", "--target", server.url, *SMALL, "--prompt-tokens", "uniform:100,4000",
        "--output-tokens", "200", "--output-dir", tmp_path / "run", env=assay_env(),
    )  # fmt: skip
    assert_one_error_line(
        result, "--prompt-tokens at most 4,000 + --output-tokens 200 = 4,200 tokens", "4,096"
    )
    assert server.stats()["requests"] == 0  # not even the probe
    assert not (tmp_path / "run").exists()


async def test_a_trace_row_above_the_listed_window_is_named_by_its_line(
    tmp_path: Path, start_mock: StartMock
) -> None:
    server = await start_mock(MockConfig(max_model_len=2048))
    trace = tmp_path / "trace.jsonl"
    trace.write_text(
        '{"timestamp": 0, "input_length": 100, "output_length": 5, "hash_ids": [1]}\n'
        '{"timestamp": 5, "input_length": 2040, "output_length": 9, "hash_ids": [1]}\n',
        encoding="utf-8",
    )
    result = await run_assay_async(
        "run", "--target", server.url, "--processes", "1", "--profile", "replay",
        "--trace", trace, "--output-dir", tmp_path / "run", env=assay_env(),
    )  # fmt: skip
    assert_one_error_line(result, "trace.jsonl, line 2", "2,049 tokens", "2,048")
    assert server.stats()["requests"] == 0


async def test_context_window_zero_runs_what_the_window_would_refuse(
    tmp_path: Path, start_mock: StartMock
) -> None:
    server = await start_mock(MockConfig(max_model_len=256))
    result = await run_assay_async(
        "run", "--target", server.url, *SMALL, "--prompt-tokens", "300", "--output-tokens",
        "8", "--context-window", "0", "--output-dir", tmp_path / "run", env=assay_env(),
    )  # fmt: skip
    assert result.exit_code == 0, result.stdout + result.stderr
    assert server.stats()["requests"] == 4  # the probe and the three measured


async def test_a_stated_context_window_is_checked_where_the_server_names_none(
    tmp_path: Path, start_mock: StartMock
) -> None:
    server = await start_mock(MockConfig())
    result = await run_assay_async(
        "run", "--target", server.url, *SMALL, "--prompt-tokens", "300", "--output-tokens",
        "8", "--context-window", "256", "--output-dir", tmp_path / "run", env=assay_env(),
    )  # fmt: skip
    assert_one_error_line(result, "308 tokens", "256 tokens (--context-window)")
    assert server.stats()["requests"] == 0


async def test_requests_that_fit_the_listed_window_run_and_the_window_is_said(
    tmp_path: Path, start_mock: StartMock
) -> None:
    server = await start_mock(MockConfig(max_model_len=4096))
    result = await run_assay_async(
        "run", "--target", server.url, *SMALL, "--prompt-tokens", "64", "--output-tokens",
        "8", "--output-dir", tmp_path / "run", env=assay_env(),
    )  # fmt: skip
    assert result.exit_code == 0, result.stdout + result.stderr
    assert "context window 4,096 (max_model_len of /v1/models)" in result.stdout
