"""assay against GuideLLM's mock server: clean traffic, `--output-tokens 0` (every answer
empty) and `--fail-after-requests` (500 after N answers).
Regression tests for issue 8 (real engines)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conformance.drive import CliRun, run_cli
from tests.conformance.guidellm import MODEL, OUTPUT_TOKENS, guidellm_mock
from tests.conformance.servers import RunningServer

pytestmark = pytest.mark.conformance

REQUESTS = 20
LOAD = ("--model", MODEL, "--profile", "concurrent", "--concurrency", "4")
SIZE = ("--prompt-tokens", "16", "--output-tokens", str(OUTPUT_TOKENS))
CASES = [
    (endpoint, stream)
    for endpoint in ("chat", "completions", "responses")
    for stream in (True, False)
]


@pytest.fixture(scope="module")
def clean(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    with guidellm_mock(tmp_path_factory.mktemp("guidellm-clean")) as server:
        yield server


@pytest.fixture(scope="module")
def silent(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    with guidellm_mock(tmp_path_factory.mktemp("guidellm-silent"), "--output-tokens", "0") as s:
        yield s


def _run(server: RunningServer, out: Path, endpoint: str, stream: bool, *args: str) -> CliRun:
    flags = ("--endpoint", endpoint, "--stream" if stream else "--no-stream")
    return run_cli(server.url, out, *LOAD, *SIZE, *flags, *args)


@pytest.mark.parametrize(("endpoint", "stream"), CASES)
def test_guidellm_clean_traffic_completes_with_the_servers_usage(
    clean: RunningServer, tmp_path: Path, endpoint: str, stream: bool
) -> None:
    run = _run(clean, tmp_path, endpoint, stream, "--max-requests", str(REQUESTS))
    assert run.exit_code == 0, run.output
    assert run.outcomes["completed"] == REQUESTS
    usage = [r["usage"]["completion_tokens"] for r in run.records]
    assert usage == [OUTPUT_TOKENS] * REQUESTS
    assert run.report["totals"]["usable_output_tokens"] == sum(usage)


@pytest.mark.parametrize("endpoint", ["chat", "completions", "responses"])
def test_guidellm_streams_count_only_chunks_that_carry_text(
    clean: RunningServer, tmp_path: Path, endpoint: str
) -> None:
    # The completions stream ends with a "" chunk that only carries finish_reason: not a token.
    run = _run(clean, tmp_path, endpoint, True, "--max-requests", str(REQUESTS))
    streamed = [r["response"]["streamed_tokens"] for r in run.completed()]
    assert streamed == [OUTPUT_TOKENS] * REQUESTS
    latency = run.report["steps"][0]["metrics"]["latency"]
    itl, coalesced = latency["itl_ms"]["count"], latency["itl_coalesced_gaps"]
    # At most one gap per token after the first (a finish-only chunk counted as a token would
    # add one per request); tokens that came in the first read with the first token give no
    # gap and are counted as coalesced, so nothing is unaccounted.
    assert itl <= (OUTPUT_TOKENS - 1) * REQUESTS
    assert itl + coalesced >= (OUTPUT_TOKENS - 1) * REQUESTS


@pytest.mark.parametrize(("endpoint", "stream"), CASES)
def test_guidellm_zero_output_tokens_is_empty_response(
    silent: RunningServer, tmp_path: Path, endpoint: str, stream: bool
) -> None:
    run = _run(silent, tmp_path, endpoint, stream, "--max-requests", str(REQUESTS))
    # GuideLLM 0.8.1's completions stream handler raises on zero tokens (UnboundLocalError on
    # `index`) and answers 500: an HTTP error, rightly, not an empty answer.
    code = "http_status" if (endpoint, stream) == ("completions", True) else "empty_response"
    assert run.errors_by_code == {code: REQUESTS}, run.errors_by_code
    assert run.exit_code == 1


def test_guidellm_fail_after_requests_is_http_status(tmp_path: Path) -> None:
    with guidellm_mock(tmp_path, "--fail-after-requests", "10") as server:
        run = run_cli(
            server.url,
            tmp_path / "run",
            "--model",
            MODEL,
            "--profile",
            "synchronous",
            *SIZE,
            "--max-requests",
            "30",
            "--no-probe",  # the server counts every request toward its failure threshold
        )
    assert run.outcomes["completed"] == 10
    assert run.errors_by_code == {"http_status": 20}
    errored = [r for r in run.records if r["status"] == "errored"]
    assert all("fail_after_requests" in r["message"] for r in errored)
    assert run.exit_code == 1
