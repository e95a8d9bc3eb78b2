"""The scrape before the load is retried while its problem may pass (issue 38 item 9): one
unreadable first `/metrics` page turned the cross-check off for the whole run."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from assay.server_metrics import ServerMetricsObserver

GOOD = b"# TYPE vllm:request_success_total counter\nvllm:request_success_total 3\n"
BAD = b"this is {not metrics\n"


@contextmanager
def metrics_server(answers: list[tuple[int, bytes]]) -> Iterator[tuple[str, list[int]]]:
    """Answers GET with `answers` in turn, then the last one again; notes each status sent."""
    sent: list[int] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            status, body = answers[min(len(sent), len(answers) - 1)]
            sent.append(status)
            self.send_response(status)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/metrics", sent
    finally:
        server.shutdown()
        server.server_close()


def test_an_unreadable_first_page_is_retried_issue_38() -> None:
    with (
        metrics_server([(200, BAD), (200, GOOD)]) as (url, sent),
        ServerMetricsObserver(url, interval_s=60) as observer,
    ):
        first = observer.scrape_first(pause_s=0.01)
    assert first.problem is None
    assert first.samples == {"vllm:request_success_total": 3.0}
    assert sent == [200, 200]


def test_a_server_error_is_retried_until_the_attempts_run_out() -> None:
    with (
        metrics_server([(500, b"oops")]) as (url, sent),
        ServerMetricsObserver(url, interval_s=60) as observer,
    ):
        first = observer.scrape_first(attempts=3, pause_s=0.01)
    assert first.problem is not None
    assert "HTTP 500" in first.problem
    assert sent == [500, 500, 500]


def test_a_missing_metrics_page_is_not_retried() -> None:
    with (
        metrics_server([(404, b"no")]) as (url, sent),
        ServerMetricsObserver(url, interval_s=60) as observer,
    ):
        first = observer.scrape_first(pause_s=0.01)
    assert first.problem is not None
    assert sent == [404]
