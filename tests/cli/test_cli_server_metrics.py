"""Server metrics end to end: the embedded mock's /metrics agrees with assay's counts, a mock
that misreports is flagged, and credentials never go to a metrics URL of another origin."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar

import pytest
from pydantic import SecretStr
from tests.backend.backend_loopback import unused_port_url
from tests.cli.cli_harness import assay_mock, read_report, run_assay, run_fast

from assay.backend import BackendSettings
from assay.benchmark.server_observation import observe_server
from assay.config import RunConfig

METRICS_TEXT = b"# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running 0\n"


def test_a_run_against_the_mock_shows_the_server_metrics_agreeing(tmp_path: Path) -> None:
    result = run_fast(tmp_path, "--max-requests", "120", "--processes", "2")
    assert result.exit_code == 0, result.stderr
    section = read_report(tmp_path).server_metrics
    assert section is not None
    assert section.kind is not None
    assert section.kind.value == "vllm"
    assert {check.quantity for check in section.checks} == {
        "requests_finished",
        "generation_tokens",
    }
    assert all(check.agrees for check in section.checks), section.checks
    assert section.run.requests_finished is not None
    assert section.run.requests_finished >= 110  # the demo faults cut a few streams
    assert "requests_finished: agrees" in result.stdout
    assert "WARNING" not in result.stdout


@pytest.fixture
def misreporting_mock() -> Iterator[str]:
    with assay_mock("--metrics-scale", "0.5", "--output-tokens", "8") as url:
        yield url


def test_a_server_whose_metrics_disagree_is_flagged(tmp_path: Path, misreporting_mock: str) -> None:
    result = run_assay(
        "run", "--target", misreporting_mock, "--output-dir", tmp_path, "--max-requests", "60",
        "--profile", "concurrent", "--concurrency", "4", "--processes", "1",
    )  # fmt: skip
    assert result.exit_code == 0, result.stderr
    section = read_report(tmp_path).server_metrics
    assert section is not None
    finished = next(check for check in section.checks if check.quantity == "requests_finished")
    assert not finished.agrees
    assert finished.server == 30
    assert finished.assay == 60
    assert "WARNING: disagrees" in result.stdout
    assert "server reports 30 finished requests but assay read 60 answers" in result.stdout
    assert "Server metrics cross-check" in (tmp_path / "report.html").read_text()


def test_no_server_metrics_scrapes_nothing(tmp_path: Path) -> None:
    result = run_fast(tmp_path, "--max-requests", "20", "--no-server-metrics")
    assert result.exit_code == 0, result.stderr
    assert read_report(tmp_path).server_metrics is None
    assert "server metrics" not in result.stdout.lower()


def test_a_named_metrics_url_that_does_not_answer_is_one_error_line(tmp_path: Path) -> None:
    url = unused_port_url() + "/metrics"
    result = run_fast(tmp_path, "--max-requests", "5", "--server-metrics", url)
    assert result.exit_code == 2
    assert result.stderr.startswith("error: --server-metrics: GET ")
    assert "Traceback" not in result.stderr


def test_server_metrics_takes_only_an_http_url(tmp_path: Path) -> None:
    result = run_fast(tmp_path, "--max-requests", "5", "--server-metrics", "ftp://x/metrics")
    assert result.exit_code == 2
    assert "http(s) URL or off" in result.stderr


class _Recorder(BaseHTTPRequestHandler):
    seen: ClassVar[list[dict[str, str]]] = []

    def do_GET(self) -> None:
        type(self).seen.append(dict(self.headers.items()))
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(METRICS_TEXT)))
        self.end_headers()
        self.wfile.write(METRICS_TEXT)

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def recording_server() -> Iterator[str]:
    _Recorder.seen = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Recorder)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def _scrape_once(target: str, metrics_url: str) -> None:
    config = RunConfig.model_validate(
        {"target": target, "server_metrics": metrics_url, "headers": {"X-Api-Key": "k-1"}}
    )
    backend = BackendSettings(
        base_url=target, api_key=SecretStr("sk-secret"), headers={"X-Api-Key": "k-1"}
    )
    with observe_server(config.server_metrics, backend, lambda _: None) as observer:
        assert observer is not None


def test_credentials_never_go_to_a_metrics_url_of_another_origin(recording_server: str) -> None:
    _scrape_once(unused_port_url(), recording_server + "/metrics")
    assert _Recorder.seen
    for headers in _Recorder.seen:
        assert "Authorization" not in headers
        assert "X-Api-Key" not in headers


def test_credentials_go_with_a_metrics_url_of_the_target_origin(recording_server: str) -> None:
    _scrape_once(recording_server, recording_server + "/metrics")
    assert _Recorder.seen
    assert _Recorder.seen[0]["Authorization"] == "Bearer sk-secret"
    assert _Recorder.seen[0]["X-Api-Key"] == "k-1"


def test_a_run_with_tool_calls_shows_the_server_metrics_agreeing(tmp_path: Path) -> None:
    # Issue 20 item 3: "server generated 960 tokens; assay counted 294" on the mock's own tool
    # calls: its /metrics counted a text answer it never sent.
    tools = (
        '{"tools": [{"type": "function", "function": {"name": "book_table", "parameters": '
        '{"type": "object", "properties": {"guests": {"type": "integer"}, '
        '"city": {"type": "string"}}}}}]}'
    )
    result = run_fast(
        tmp_path, "--max-requests", "60", "--processes", "1", "--output-tokens", "64",
        "--mock-fault", "empty_stream=0", "--extra-body", tools,
    )  # fmt: skip
    assert result.exit_code == 0, result.stdout + result.stderr
    section = read_report(tmp_path).server_metrics
    assert section is not None
    assert [check.quantity for check in section.checks] == [
        "requests_finished",
        "generation_tokens",
    ]
    assert all(check.agrees for check in section.checks), section.checks
    tokens = section.checks[1]
    assert tokens.server == tokens.assay
    assert "WARNING" not in result.stdout


def test_streams_cut_mid_way_count_their_tokens_on_both_sides(tmp_path: Path) -> None:
    # vLLM counts the tokens it generated before a stream was cut; so does the mock, and assay
    # counts the tokens the cut answers carried: the cross-check agrees instead of crying wolf.
    with assay_mock("--fault", "truncated_stream=1", "--output-tokens", "8") as url:
        result = run_assay(
            "run", "--target", url, "--output-dir", tmp_path, "--max-requests", "20",
            "--processes", "1",
        )  # fmt: skip
    assert result.exit_code == 1, result.stdout + result.stderr  # every answer was cut
    assert "generation_tokens: agrees: server generated 40 tokens; assay counted 40" in (
        result.stdout
    )
    assert "WARNING" not in result.stdout


def test_a_non_streamed_transcription_run_cannot_compare_tokens_issue_38(tmp_path: Path) -> None:
    """The mock answers a non-streamed transcription with `usage: {"type": "duration"}`: assay
    has no token count, so the token check says it cannot compare instead of disagreeing; the
    run is told that without a language vLLM runs a detection pass."""
    result = run_assay(
        "run", "--output-dir", tmp_path, "--endpoint", "transcriptions", "--audio-seconds",
        "1", "--no-stream", "--max-requests", "10", "--mock-fault", "empty_stream=0",
        "--mock-fault", "truncated_stream=0", "--mock-fault", "inband_error=0",
    )  # fmt: skip
    assert result.exit_code == 0, result.stderr
    assert "generation_tokens: cannot compare (10 of 10 answers carried no token count" in (
        result.stdout
    )
    assert "requests_finished: agrees" in result.stdout
    assert "WARNING" not in result.stdout
    assert "no `language` is sent" in result.stdout + result.stderr
    section = read_report(tmp_path).server_metrics
    assert section is not None
    assert [check.verdict for check in section.checks] == ["agrees", "cannot compare"]


def test_requests_outside_the_measured_window_are_no_false_disagreement(tmp_path: Path) -> None:
    # The server counts the warm-up's requests too; assay's figures leave them out (they
    # disagreed on every windowed run, so on every capacity search).
    result = run_fast(
        tmp_path, "--profile", "constant", "--rate", "40", "--max-seconds", "3",
        "--warmup-seconds", "1", "--processes", "1",
    )  # fmt: skip
    assert result.exit_code == 0, result.stderr
    report = read_report(tmp_path)
    outside = sum(step.metrics.excluded for step in report.steps)
    assert outside > 0
    section = report.server_metrics
    assert section is not None
    finished = next(check for check in section.checks if check.quantity == "requests_finished")
    assert finished.server > finished.assay  # the server served the warm-up as well
    assert all(check.agrees for check in section.checks), section.checks
    assert f"and sent {outside} outside the measured window" in result.stdout
    assert "WARNING" not in result.stdout
