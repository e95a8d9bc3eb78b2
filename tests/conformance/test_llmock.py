"""assay against llmock: clean traffic, HTTP error rates, stream faults and the empty `reply`
scenario, each outcome checked against llmock's own request journal.
Regression tests for issue 8 (real engines)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from assay.core import Endpoint, GenerationRequest
from assay.records import Errored
from tests.conformance.drive import CliRun, outcome_code, requests_for, run_cli, send
from tests.conformance.llmock import MODEL, expected_code, journal, llmock, prompt_of, reset, script
from tests.conformance.servers import RunningServer

pytestmark = pytest.mark.conformance

REQUESTS = 40
# llmock ignores max_tokens; its answers are a dozen words, so the limit never cuts them.
LOAD = ("--model", MODEL, "--profile", "concurrent", "--concurrency", "4")
SIZE = ("--prompt-tokens", "16", "--output-tokens", "64")


@pytest.fixture(scope="module")
def clean(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    with llmock(tmp_path_factory.mktemp("llmock-clean")) as server:
        yield server


@pytest.fixture(scope="module")
def erring(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    # Error rates apply to every route, /v1/models included: driven through the library.
    flags = ("--error-rate", "500=0.15", "--error-rate", "429=0.1", "--error-rate", "503=0.05")
    with llmock(tmp_path_factory.mktemp("llmock-erring"), *flags) as server:
        yield server


@pytest.fixture(scope="module")
def breaking(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    faults = ("truncate=0.15", "disconnect=0.15", "malformed=0.15")
    flags = tuple(arg for fault in faults for arg in ("--stream-fault", fault))
    with llmock(tmp_path_factory.mktemp("llmock-breaking"), *flags) as server:
        yield server


def _run(server: RunningServer, out: Path, *args: str) -> CliRun:
    # No probe request: the journal then holds exactly the run's requests, one per record.
    reset(server)
    return run_cli(
        server.url, out, *LOAD, *SIZE, "--max-requests", str(REQUESTS), "--no-probe", *args
    )


def _mismatches(
    server: RunningServer, outcomes: dict[str, str], requests: list[GenerationRequest]
) -> list[tuple[str, int, str | None, str]]:
    """Requests whose assay outcome is not what llmock's journal says it did to them."""
    entries = journal(server, requests[0].endpoint.path)
    assert len(entries) == len(requests)
    by_prompt = {prompt_of(e): e for e in entries}
    assert len(by_prompt) == len(requests), "prompts must be unique to match the journal"
    mismatches = []
    for request in requests:
        prompt = request.messages[-1]["content"] if request.messages else request.prompt
        entry = by_prompt[str(prompt)]
        got = outcomes[request.request_id]
        if got != expected_code(entry):
            mismatches.append((request.request_id, entry["status"], entry["fault"], got))
    return mismatches


def _cli_outcomes(run: CliRun) -> dict[str, str]:
    return {r["id"]: r["code"] if r["status"] == "errored" else "completed" for r in run.records}


@pytest.mark.parametrize(
    ("endpoint", "stream"),
    [
        (Endpoint.chat, True),
        (Endpoint.chat, False),
        (Endpoint.responses, True),
        (Endpoint.responses, False),
    ],
)
def test_llmock_clean_traffic_completes_with_the_servers_usage(
    clean: RunningServer, tmp_path: Path, endpoint: Endpoint, stream: bool
) -> None:
    run = _run(
        clean, tmp_path, "--endpoint", endpoint.value, "--stream" if stream else "--no-stream"
    )
    assert run.exit_code == 0, run.output
    assert run.outcomes == {
        "dispatched": REQUESTS,
        "completed": REQUESTS,
        "errored": 0,
        "cancelled": 0,
    }
    served = journal(clean, endpoint.path)
    assert [e["status"] for e in served] == [200] * REQUESTS
    assert all(e["completed"] and e["fault"] is None for e in served)
    usage = sum(r["usage"]["completion_tokens"] for r in run.records)
    assert run.report["totals"]["usable_output_tokens"] == usage
    assert {r["response"]["finish_reason"] for r in run.records} == {"stop"}


@pytest.mark.parametrize("endpoint", [Endpoint.chat, Endpoint.responses])
def test_llmock_clean_streams_pass_the_strict_usage_check(
    clean: RunningServer, tmp_path: Path, endpoint: Endpoint
) -> None:
    # llmock streams words, not tokens: 6 content chunks can carry 9 tokens of usage. A clean
    # stream must not be a usage_mismatch because its chunk count differs from usage.
    run = _run(clean, tmp_path, "--endpoint", endpoint.value, "--strict")
    assert run.errors_by_code == {}, run.errors_by_code
    assert run.exit_code == 0


@pytest.mark.parametrize("stream", [True, False])
def test_llmock_http_error_rates_match_its_journal(erring: RunningServer, stream: bool) -> None:
    reset(erring)
    requests = requests_for(
        Endpoint.chat, model=MODEL, count=REQUESTS, stream=stream, output_tokens=64
    )
    records = send(erring.url, requests, concurrency=4)
    outcomes = {r.request_id: outcome_code(r) for r in records}
    assert _mismatches(erring, outcomes, requests) == []
    errors = sum(1 for e in journal(erring, Endpoint.chat.path) if e["status"] >= 400)
    assert Counter(outcomes.values())["http_status"] == errors > 0


def test_llmock_stream_faults_match_its_journal(breaking: RunningServer, tmp_path: Path) -> None:
    run = _run(breaking, tmp_path, "--endpoint", "chat", "--stream")
    requests = requests_for(Endpoint.chat, model=MODEL, count=REQUESTS, output_tokens=64)
    assert _mismatches(breaking, _cli_outcomes(run), requests) == []
    served = journal(breaking, Endpoint.chat.path)
    faults = Counter((e["fault"] or "").split("@")[0] for e in served)
    assert faults["stream:truncate"] + faults["stream:disconnect"] + faults["stream:malformed"] > 0


@pytest.mark.parametrize(("cut_at", "lost"), [(3, "usage and [DONE]"), (4, "[DONE]")])
def test_llmock_truncation_after_the_finish_chunk_is_truncated_stream(
    clean: RunningServer, cut_at: int, lost: str
) -> None:
    # A one-word reply streams: role (0), the word (1), the finish chunk (2), usage (3), [DONE] (4).
    # llmock draws its cut between chunks 1 and 6, so on a short answer it can fall after the
    # finish chunk: the response still ends early (here without its `lost` part).
    reset(clean)
    only_chat = {"path": Endpoint.chat.path}
    script(
        clean,
        {"type": "reply", "text": "Hello", "times": 1, "match": only_chat},
        {"type": "stream_fault", "kind": "truncate", "after_chunks": cut_at, "match": only_chat},
    )
    [request] = requests_for(Endpoint.chat, model=MODEL, count=1, output_tokens=64)
    [record] = send(clean.url, [request])
    [entry] = journal(clean, Endpoint.chat.path)
    assert (entry["fault"], entry["chunks_sent"]) == (f"stream:truncate@{cut_at}", cut_at)
    assert outcome_code(record) == "truncated_stream", lost
    assert isinstance(record.outcome, Errored)
    assert "after finish_reason='stop'" in record.outcome.diagnostic.message


@pytest.mark.parametrize(
    ("endpoint", "stream"),
    [
        (Endpoint.chat, True),
        (Endpoint.chat, False),
        (Endpoint.responses, True),
        (Endpoint.responses, False),
    ],
)
def test_llmock_empty_reply_is_empty_response(
    clean: RunningServer, tmp_path: Path, endpoint: Endpoint, stream: bool
) -> None:
    # llmock's scripted empty reply reports completion_tokens 1: still no text at all.
    reset(clean)
    # Matched on the endpoint: readiness and metrics requests must not use up the replies.
    script(
        clean,
        {"type": "reply", "text": "", "times": 20, "match": {"path": endpoint.path}},
    )
    run = run_cli(
        clean.url,
        tmp_path,
        *LOAD,
        *SIZE,
        "--max-requests",
        "20",
        "--no-probe",  # a probe would take one of the 20 scripted replies
        "--endpoint",
        endpoint.value,
        "--stream" if stream else "--no-stream",
    )
    assert [e["status"] for e in journal(clean, endpoint.path)] == [200] * 20
    assert run.errors_by_code == {"empty_response": 20}, run.errors_by_code
    assert run.exit_code == 1


def test_llmock_without_completions_stops_early_and_names_the_endpoint(
    clean: RunningServer, tmp_path: Path
) -> None:
    # llmock serves no /v1/completions: every first answer is the same 404.
    reset(clean)
    run = run_cli(
        clean.url, tmp_path, *LOAD, *SIZE, "--max-requests", "200", "--endpoint", "completions"
    )
    sent = journal(clean, "/v1/completions")
    assert all(e["status"] == 404 for e in sent)
    assert len(sent) <= 8, f"{len(sent)} requests sent to an endpoint that answers 404"
    assert run.exit_code != 0
    assert "endpoint" in run.output


def test_llmock_one_429_on_the_model_list_is_retried(clean: RunningServer, tmp_path: Path) -> None:
    # A 429 on the model list is a server not ready yet: --wait-ready retries it.
    reset(clean)
    script(clean, {"type": "fail", "status": 429, "times": 1, "match": {"path": "/v1/models"}})
    run = run_cli(
        clean.url,
        tmp_path,
        "--wait-ready",
        "10",
        "--profile",
        "concurrent",
        "--concurrency",
        "4",
        *SIZE,
        "--max-requests",
        "8",
    )
    assert run.exit_code == 0, run.output
    assert run.outcomes["completed"] == 8


def test_llmock_step_title_names_the_profile_once(clean: RunningServer, tmp_path: Path) -> None:
    run = _run(clean, tmp_path, "--endpoint", "chat")
    assert "concurrent x4 concurrent" not in run.output
    assert run.output.count("concurrent, 4 streams") == 1
