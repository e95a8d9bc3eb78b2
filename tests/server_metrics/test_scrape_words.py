"""A scrape on assay's own transport says what failed in words (issue 35: scrapes moved off
aiohttp, whose exception class names the problems used to quote)."""

from __future__ import annotations

import gzip
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from assay.server_metrics import scrape

PAGE = b"# TYPE vllm:request_success_total counter\nvllm:request_success_total 3\n"


@contextmanager
def page_server(body: bytes, headers: dict[str, str]) -> Iterator[tuple[str, list[str]]]:
    """Answers every GET with `body` and `headers`; keeps the head of each request."""
    heads: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            heads.append(str(self.headers))
            self.send_response(200)
            for name, value in headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/metrics", heads
    finally:
        server.shutdown()
        server.server_close()


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


async def test_a_refused_scrape_says_connection_refused() -> None:
    url = f"http://127.0.0.1:{closed_port()}/metrics"
    scraped = await scrape(url, {}, 5.0)
    assert scraped.problem == f"GET {url} failed: connection refused"
    assert not scraped.may_pass


async def test_a_page_is_read_and_its_headers_sent() -> None:
    with page_server(PAGE, {"Content-Type": "text/plain"}) as (url, heads):
        scraped = await scrape(url, {"Authorization": "Bearer sk-1"}, 5.0)
    assert scraped.problem is None
    assert scraped.samples == {"vllm:request_success_total": 3.0}
    assert "Authorization: Bearer sk-1" in heads[0]
    assert "Accept-Encoding: identity" in heads[0]


async def test_a_compressed_page_is_unreadable_in_words() -> None:
    with page_server(gzip.compress(PAGE), {"Content-Encoding": "gzip"}) as (url, _):
        scraped = await scrape(url, {}, 5.0)
    assert scraped.problem == (
        f"GET {url} cannot be read: Content-Encoding gzip (assay asks for an uncompressed "
        "body and does not decode this encoding)"
    )


async def test_a_header_with_a_line_break_is_not_sent() -> None:
    with page_server(PAGE, {}) as (url, heads):
        scraped = await scrape(url, {"X-Token": "a\r\nInjected: 1"}, 5.0)
    assert scraped.problem is not None
    assert scraped.problem.startswith(f"GET {url} cannot be sent:")
    assert heads == []
