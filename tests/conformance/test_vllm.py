"""assay against vLLM on CPU with the tiny models (part of the default suite since issue 38;
`scripts/conformance-vllm` runs it alone). Token totals are checked against vLLM's own Prometheus
counter, and the cross-check lines of rerank and score against its per-document accounting.
Regression tests for issue 8 (real engines) and issue 38 (cross-checks that know vLLM)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from pydantic import JsonValue

from assay.core import Endpoint
from tests.conformance.drive import codes, requests_for, responses, run_cli, send
from tests.conformance.llama_cpp import EOS_ID
from tests.conformance.servers import MODEL_NAME, RunningServer
from tests.conformance.vllm import (
    CROSS_ENCODER_DIR,
    CROSS_ENCODER_NAME,
    WHISPER_DIR,
    WHISPER_NAME,
    generation_tokens,
    vllm_server,
)

pytestmark = pytest.mark.conformance

REQUESTS = 20
OUTPUT_TOKENS = 16
LOAD = ("--model", MODEL_NAME, "--profile", "concurrent", "--concurrency", "4")
SIZE = ("--prompt-tokens", "16", "--output-tokens", str(OUTPUT_TOKENS))
CASES = [
    (e, s) for e in (Endpoint.chat, Endpoint.completions, Endpoint.responses) for s in (True, False)
]
FORCE_EOS: dict[str, JsonValue] = {"logit_bias": {str(EOS_ID): 100}}


@pytest.fixture(scope="module")
def vllm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    with vllm_server(tmp_path_factory.mktemp("vllm")) as server:
        yield server


@pytest.mark.parametrize(("endpoint", "stream"), CASES)
def test_vllm_clean_traffic_matches_its_generation_counter(
    vllm: RunningServer, tmp_path: Path, endpoint: Endpoint, stream: bool
) -> None:
    before = generation_tokens(vllm)
    flags = ("--endpoint", endpoint.value, "--stream" if stream else "--no-stream")
    # No probe: its one-token answer would count in vLLM's generation counter too.
    run = run_cli(
        vllm.url, tmp_path, *LOAD, *SIZE, *flags, "--max-requests", str(REQUESTS), "--no-probe"
    )
    assert run.exit_code == 0, run.output
    assert run.outcomes["completed"] == REQUESTS
    produced = generation_tokens(vllm) - before
    assert run.report["totals"]["usable_output_tokens"] == produced == OUTPUT_TOKENS * REQUESTS


@pytest.mark.parametrize(("endpoint", "stream"), CASES)
def test_vllm_forced_empty_answer_is_empty_response(
    vllm: RunningServer, endpoint: Endpoint, stream: bool
) -> None:
    requests = requests_for(
        endpoint, model=MODEL_NAME, count=REQUESTS, stream=stream, extra_body=FORCE_EOS
    )
    records = send(vllm.url, requests, concurrency=4)
    assert codes(records) == {"empty_response": REQUESTS}


@pytest.mark.parametrize("endpoint", [Endpoint.chat, Endpoint.completions])
def test_vllm_streams_never_count_more_tokens_than_usage(
    vllm: RunningServer, endpoint: Endpoint
) -> None:
    # A busy vLLM merges the tokens of several steps into one chunk, so chunks may be fewer
    # than tokens; never more: a chunk without content (role, finish, usage) is not a token.
    requests = requests_for(endpoint, model=MODEL_NAME, count=REQUESTS)
    records = send(vllm.url, requests, concurrency=4)
    assert codes(records) == {"completed": REQUESTS}
    answers = responses(records)
    assert [r.output_tokens for r in answers] == [OUTPUT_TOKENS] * REQUESTS
    assert all(0 < r.streamed_tokens <= OUTPUT_TOKENS for r in answers)


def test_vllm_responses_streams_pass_the_strict_usage_check(
    vllm: RunningServer, tmp_path: Path
) -> None:
    # vLLM's /v1/responses merges tokens into fewer text events than usage counts.
    flags = ("--endpoint", "responses", "--strict")
    # No probe: its one-token answer would count in vLLM's generation counter too.
    run = run_cli(
        vllm.url, tmp_path, *LOAD, *SIZE, *flags, "--max-requests", str(REQUESTS), "--no-probe"
    )
    assert run.errors_by_code == {}, run.errors_by_code


@pytest.fixture(scope="module")
def vllm_cross_encoder(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    with vllm_server(
        tmp_path_factory.mktemp("vllm-ce"), CROSS_ENCODER_DIR, CROSS_ENCODER_NAME
    ) as server:
        yield server


@pytest.mark.parametrize(("endpoint", "documents"), [("rerank", 4), ("rerank", 16), ("score", 4)])
def test_vllm_rerank_and_score_cross_check_per_document_issue_38(
    vllm_cross_encoder: RunningServer, tmp_path: Path, endpoint: str, documents: int
) -> None:
    """vLLM runs one engine request per (query, document) pair: the cross-check agrees and says
    so, where it warned "other traffic reached the server" before."""
    run = run_cli(
        vllm_cross_encoder.url, tmp_path, "--model", CROSS_ENCODER_NAME, "--endpoint", endpoint,
        "--documents", str(documents), "--document-tokens", "8", "--prompt-tokens", "8",
        "--max-requests", str(REQUESTS), "--profile", "concurrent", "--concurrency", "4",
    )  # fmt: skip
    assert run.exit_code == 0, run.output
    assert run.outcomes["completed"] == REQUESTS
    checks = {check["quantity"]: check for check in run.report["server_metrics"]["checks"]}
    requests = checks["requests_finished"]
    assert requests["agrees"], requests
    assert requests["server"] == REQUESTS * documents
    assert requests["message"] == (
        f"vLLM counts one request per document: {REQUESTS * documents} = {REQUESTS} answers "
        f"x {documents} documents"
    )
    assert "WARNING" not in run.output


@pytest.fixture(scope="module")
def vllm_whisper(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    # Whisper's decoder holds 448 positions.
    with vllm_server(tmp_path_factory.mktemp("vllm-wh"), WHISPER_DIR, WHISPER_NAME, 448) as server:
        yield server


def _transcribe(server: RunningServer, out: Path, *args: str) -> dict[str, dict[str, JsonValue]]:
    run = run_cli(
        server.url, out, "--model", WHISPER_NAME, "--endpoint", "transcriptions",
        "--audio-seconds", "1", "--output-tokens", str(OUTPUT_TOKENS),
        "--max-requests", str(REQUESTS), "--profile", "concurrent", "--concurrency", "4", *args,
    )  # fmt: skip
    assert run.exit_code == 0, run.output
    assert run.outcomes["completed"] == REQUESTS
    assert "WARNING" not in run.output
    return {check["quantity"]: check for check in run.report["server_metrics"]["checks"]}


def test_vllm_transcriptions_with_a_language_agree_plainly_issue_38(
    vllm_whisper: RunningServer, tmp_path: Path
) -> None:
    checks = _transcribe(vllm_whisper, tmp_path, "--stream", "--extra-body", '{"language": "en"}')
    assert checks["requests_finished"]["server"] == REQUESTS
    assert checks["generation_tokens"]["server"] == REQUESTS * OUTPUT_TOKENS
    assert all(check["agrees"] for check in checks.values())


def test_vllm_transcriptions_without_a_language_count_the_detection_pass_issue_38(
    vllm_whisper: RunningServer, tmp_path: Path
) -> None:
    checks = _transcribe(vllm_whisper, tmp_path, "--stream")
    requests, tokens = checks["requests_finished"], checks["generation_tokens"]
    assert requests["agrees"]
    assert requests["message"] == (
        "vLLM runs a language-detection request before each transcription sent without a "
        f"language: {2 * REQUESTS} = {REQUESTS} answers x 2"
    )
    assert tokens["agrees"]
    assert tokens["message"] == (
        "vLLM generates one language-detection token before each transcription sent without a "
        f"language: {REQUESTS * (OUTPUT_TOKENS + 1)} = {REQUESTS * OUTPUT_TOKENS} + {REQUESTS}"
    )


def test_vllm_non_streamed_transcriptions_cannot_compare_tokens_issue_38(
    vllm_whisper: RunningServer, tmp_path: Path
) -> None:
    checks = _transcribe(vllm_whisper, tmp_path, "--no-stream")
    assert checks["requests_finished"]["agrees"]
    tokens = checks["generation_tokens"]
    assert tokens["compared"] is False
    assert str(tokens["message"]).startswith(
        f"{REQUESTS} of {REQUESTS} answers carried no token count"
    )
