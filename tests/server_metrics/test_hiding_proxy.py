"""A proxy that turns cut streams into clean ones is named as the likely cause (issue 21 item 10).

LiteLLM in front of a server that cuts streams adds a finish reason, a usage of its own and
`[DONE]`: assay, reading the proxy, counts complete answers, and only the server's own counters
(`--server-metrics` at the upstream) show that it finished none. A stand-in proxy on loopback
does the same rewrite here. Before, the cross-check said only "the server's counter misses
requests, or counts only some outcomes"; now one line names the proxy, and it stays silent for
a proxy that changes nothing and for a metrics page at the target itself.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar
from urllib.parse import urlsplit

import pytest

from assay.server_metrics import AssayCounts, CrossCheck, ServerCounts, cross_check
from assay.server_metrics.summary import PROXY_CAUSE, likely_cause
from tests.cli.cli_harness import assay_mock, read_report, run_assay

REQUESTS = 12
LOAD = (
    "--model", "assay-mock", "--max-requests", str(REQUESTS), "--no-probe",
    "--profile", "concurrent", "--concurrency", "4", "--processes", "1",
    "--prompt-tokens", "16", "--output-tokens", "8",
)  # fmt: skip


def _counts(*, answered: int, completed: int | None, tokens: int = 0) -> AssayCounts:
    return AssayCounts(
        answered=answered,
        unfinished=0,
        output_tokens=tokens,
        max_output_tokens=8,
        completed=completed,
    )


def _cause(run: ServerCounts, counts: AssayCounts, *, elsewhere: bool) -> str | None:
    checks: tuple[CrossCheck, ...] = cross_check(run, counts)
    return likely_cause(checks, counts, metrics_elsewhere=elsewhere)


def test_fewer_finished_than_complete_answers_at_another_origin_names_a_proxy() -> None:
    cause = _cause(
        ServerCounts(requests_finished=0, generation_tokens=0),
        _counts(answered=8, completed=8, tokens=16),
        elsewhere=True,
    )
    assert (
        cause == f"the server finished 0 requests but assay read 8 complete answers: {PROXY_CAUSE}"
    )


def test_the_same_shape_at_the_target_itself_keeps_the_plain_message() -> None:
    # A server that misreports its own counters is not a proxy: no metrics from elsewhere.
    run = ServerCounts(requests_finished=4)
    counts = _counts(answered=8, completed=8)
    assert _cause(run, counts, elsewhere=False) is None
    assert "misses requests" in cross_check(run, counts)[0].message


def test_fewer_finished_than_answers_but_not_than_complete_ones_names_both_causes() -> None:
    # 8 complete answers and 4 judged unusable at the content stage; the server counted only
    # the 8: LiteLLM makes an empty body into an empty answer, and a server may not count
    # unusable answers. The line says both, and does not call the complete answers hidden.
    run = ServerCounts(requests_finished=8)
    counts = _counts(answered=12, completed=8)
    (check,) = cross_check(run, counts)
    assert not check.agrees
    assert _cause(run, counts, elsewhere=True) == (
        "the server finished 8 requests but assay read 12 answers, 4 of them unusable: a proxy "
        "between assay and the server may be turning failures into answers (or the server does "
        "not count unusable answers)"
    )
    assert _cause(run, counts, elsewhere=False) is None


def test_agreeing_counts_name_no_cause() -> None:
    run = ServerCounts(requests_finished=8, generation_tokens=64)
    assert _cause(run, _counts(answered=8, completed=8, tokens=64), elsewhere=True) is None


def test_a_count_from_an_older_report_names_no_cause() -> None:
    counts = _counts(answered=8, completed=None)
    assert _cause(ServerCounts(requests_finished=0), counts, elsewhere=True) is None


def test_without_a_request_counter_fewer_generated_tokens_name_a_proxy() -> None:
    # SGLang and llama.cpp expose no finished-request counter: the tokens carry the shape.
    counts = _counts(answered=8, completed=8, tokens=64)
    cause = _cause(ServerCounts(generation_tokens=10), counts, elsewhere=True)
    assert cause is not None
    assert cause.startswith("the server generated 10 tokens but assay counted 64")
    assert _cause(ServerCounts(generation_tokens=200), counts, elsewhere=True) is None


# --- end to end: the mock cuts every stream, a stand-in proxy makes each one clean -------------


class _Proxy(BaseHTTPRequestHandler):
    """Forwards to `upstream`; with `rewrite`, a stream that ended without `[DONE]` gets a finish
    reason, a usage chunk of the proxy's own and `[DONE]`, as LiteLLM does."""

    upstream: ClassVar[str] = ""
    rewrite: ClassVar[bool] = False
    protocol_version = "HTTP/1.0"

    def _forward(self, method: str) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else None
        target = urlsplit(self.upstream)
        connection = http.client.HTTPConnection(target.hostname or "", target.port, timeout=30)
        headers = {"Content-Type": self.headers.get("Content-Type") or "application/json"}
        connection.request(method, self.path, body=body, headers=headers)
        answer = connection.getresponse()
        try:
            text = answer.read()
        except http.client.IncompleteRead as cut:
            text = cut.partial
        connection.close()
        kind = answer.getheader("Content-Type") or "application/json"
        if self.rewrite and kind.startswith("text/event-stream"):
            text = _made_clean(text)
        self.send_response(answer.status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(text)))
        self.end_headers()
        self.wfile.write(text)

    def do_POST(self) -> None:
        self._forward("POST")

    def do_GET(self) -> None:
        self._forward("GET")

    def log_message(self, format: str, *args: object) -> None:
        pass


def _made_clean(stream: bytes) -> bytes:
    events = [line[6:] for line in stream.decode().splitlines() if line.startswith("data: ")]
    if b"[DONE]" in stream or not events:
        return stream
    first = json.loads(events[0])
    tokens = sum(
        1
        for event in events
        for choice in json.loads(event).get("choices", ())
        if choice.get("delta", {}).get("content")
    )
    base = {"id": first["id"], "object": "chat.completion.chunk", "model": first["model"]}
    finish = {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
    usage = {
        **base,
        "choices": [],
        "usage": {"prompt_tokens": 16, "completion_tokens": tokens, "total_tokens": 16 + tokens},
    }
    tail = f"data: {json.dumps(finish)}\n\ndata: {json.dumps(usage)}\n\ndata: [DONE]\n\n"
    return stream.rstrip(b"\n") + b"\n\n" + tail.encode()


def _mock(*flags: str) -> Iterator[str]:
    with assay_mock("--output-tokens", "8", *flags) as url:
        yield url


@pytest.fixture
def cutting_mock() -> Iterator[str]:
    yield from _mock("--fault", "truncated_stream=1", "--fault-after", "3")


@pytest.fixture
def clean_mock() -> Iterator[str]:
    yield from _mock()


@contextlib.contextmanager
def _proxy(upstream: str, *, rewrite: bool) -> Iterator[str]:
    handler = type("Proxy", (_Proxy,), {"upstream": upstream, "rewrite": rewrite})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def test_a_proxy_that_makes_cut_streams_clean_is_named(tmp_path: Path, cutting_mock: str) -> None:
    with _proxy(cutting_mock, rewrite=True) as proxy:
        result = run_assay(
            "run", "--target", proxy, "--server-metrics", f"{cutting_mock}/metrics",
            "--output-dir", tmp_path, *LOAD,
        )  # fmt: skip
    assert result.exit_code == 0, result.stderr
    report = read_report(tmp_path)
    assert report.totals.outcomes.completed == REQUESTS  # the proxy hid every cut
    section = report.server_metrics
    assert section is not None
    assert section.metrics_elsewhere
    assert section.run.requests_finished == 0
    assert section.likely_cause is not None
    assert PROXY_CAUSE in section.likely_cause
    assert f"WARNING: likely cause: the server finished 0 requests but assay read {REQUESTS}" in (
        result.stdout
    )
    assert PROXY_CAUSE in (tmp_path / "report.html").read_text()


def test_the_cut_streams_seen_directly_name_no_proxy(tmp_path: Path, cutting_mock: str) -> None:
    result = run_assay(
        "run", "--target", cutting_mock, "--server-metrics", f"{cutting_mock}/metrics",
        "--output-dir", tmp_path, *LOAD,
    )  # fmt: skip
    assert result.exit_code == 1, result.stderr  # every request errored: an invalid run
    report = read_report(tmp_path)
    assert report.totals.outcomes.completed == 0
    section = report.server_metrics
    assert section is not None
    assert not section.metrics_elsewhere
    assert section.likely_cause is None
    assert "likely cause" not in result.stdout


def test_a_proxy_that_changes_nothing_names_no_cause(tmp_path: Path, clean_mock: str) -> None:
    with _proxy(clean_mock, rewrite=True) as proxy:
        result = run_assay(
            "run", "--target", proxy, "--server-metrics", f"{clean_mock}/metrics",
            "--output-dir", tmp_path, *LOAD,
        )  # fmt: skip
    assert result.exit_code == 0, result.stderr
    section = read_report(tmp_path).server_metrics
    assert section is not None
    assert section.metrics_elsewhere
    assert all(check.agrees for check in section.checks), section.checks
    assert section.likely_cause is None
    assert "WARNING" not in result.stdout
