"""A plain-text page served over HTTPS on loopback with a certificate made for the test, for the
tests of scrapes that verify TLS as the requests do."""

from __future__ import annotations

import http.server
import ssl
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.backend.test_tls import self_signed


@contextmanager
def https_page(folder: Path, body: bytes) -> Iterator[tuple[str, Path]]:
    """Serve `body` at `https://127.0.0.1:PORT/metrics`; yield that URL and the certificate the
    server presents (self-signed, written into `folder`)."""

    class _Page(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            pass

    cert, key = self_signed(folder)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Page)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"https://127.0.0.1:{server.server_address[1]}/metrics", cert
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
