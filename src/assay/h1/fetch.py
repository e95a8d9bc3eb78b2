"""One side request (a model list, a metrics page, a probe of the headers a proxy adds) on a
connection of its own: method, URL, headers and body in; status, headers and a capped body out.

The connection is opened as the pool opens one (`open_connection`), asks the server to close it
after the answer, and is closed whatever happens. Failures are exceptions a caller puts in its
own words: `ConnectFailure` (no connection), `WireFault` (the answer broke or cannot be read),
`TimeoutError` (no whole answer within `timeout_s`), `ValueError` (a URL or header that cannot
be sent). Redirects are not followed and no proxy is used: a side request goes where it is sent.
"""

from __future__ import annotations

import asyncio
import ssl
import time
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import quote, urlsplit

from assay.h1.connection import H1Connection
from assay.h1.credentials import with_url_credentials
from assay.h1.pool import open_connection
from assay.h1.request import PATH_SAFE

_DEFAULT_PORTS = {"http": 80, "https": 443}
_ASKED_HEADERS = frozenset((b"content-encoding",))


@dataclass(frozen=True, slots=True)
class Fetched:
    """An answer: its status, its header names (lower case), and its body, cut after `limit`
    bytes (`len(body) > limit` says the whole was longer). `unreadable` says why there is no
    body to read (an encoding assay does not decode), else None."""

    status: int
    header_names: tuple[str, ...]
    body: bytes
    unreadable: str | None = None


class _EveryHeader(H1Connection):
    """A connection that keeps the name of every header of the answer, not only the few a
    request's reader asks for."""

    __slots__ = ("names",)

    def __init__(self) -> None:
        super().__init__(time.monotonic_ns, _ASKED_HEADERS)
        self.names: list[str] = []

    def on_header(self, name: bytes, value: bytes) -> None:
        self.names.append(name.decode("latin-1").lower())
        super().on_header(name, value)


class _Body:
    """Collects a body up to one byte past `limit`, then asks for no more."""

    __slots__ = ("encoding", "limit", "parts", "size", "status")

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.parts: list[bytes] = []
        self.size = 0
        self.status = 0
        self.encoding: str | None = None

    def on_head(self, status: int, reason: str, headers: dict[str, str], received_ns: int) -> bool:
        self.status = status
        encoding = headers.get("content-encoding", "").strip()
        if encoding.lower() in ("", "identity"):
            return False
        self.encoding = encoding
        return True  # a body assay cannot read: nothing of it is wanted

    def on_body(self, chunk: bytes, received_ns: int) -> bool:
        room = self.limit + 1 - self.size
        if len(chunk) >= room:
            self.parts.append(chunk[:room])
            self.size += room
            return True
        self.parts.append(chunk)
        self.size += len(chunk)
        return False


def request_bytes(
    method: str, url: str, headers: Mapping[str, str], body: bytes | None
) -> tuple[str, int, bool, bytes]:
    """The host, port, TLS flag and bytes of a request; `ValueError` when it cannot be sent.
    User info in `url` is sent as Basic credentials unless `headers` hold an Authorization
    header, and never on the request line or in Host.

    >>> host, port, tls, data = request_bytes("GET", "http://h:9/m?a=1", {"X": "y"}, None)
    >>> host, port, tls
    ('h', 9, False)
    >>> data.decode().split("\\r\\n")
    ['GET /m?a=1 HTTP/1.1', 'Host: h:9', 'X: y', 'Connection: close', '', '']
    >>> request_bytes("GET", "http://bob:pw@h/m", {}, None)[3].decode().split("\\r\\n")[:3]
    ['GET /m HTTP/1.1', 'Host: h', 'Authorization: Basic Ym9iOnB3']
    >>> request_bytes("GET", "ftp://h/", {}, None)
    Traceback (most recent call last):
    ...
    ValueError: not an http:// or https:// URL
    """
    parts = urlsplit(url)
    if parts.scheme not in _DEFAULT_PORTS or not parts.hostname:
        raise ValueError("not an http:// or https:// URL")
    port = parts.port or _DEFAULT_PORTS[parts.scheme]  # raises ValueError for a bad port
    target = quote(parts.path or "/", safe=PATH_SAFE)
    if parts.query:
        target += "?" + quote(parts.query, safe=PATH_SAFE + "?")
    lines = [f"{method} {target} HTTP/1.1", f"Host: {parts.netloc.rpartition('@')[2]}"]
    for name, value in with_url_credentials(url, headers).items():
        if any(c in name + value for c in "\r\n\0") or not name:
            raise ValueError("a header name or value holds a line break")
        lines.append(f"{name}: {value}")
    lines.append("Connection: close")
    if body is not None:
        lines.append(f"Content-Length: {len(body)}")
    head = ("\r\n".join(lines) + "\r\n\r\n").encode("utf-8")
    return parts.hostname, port, parts.scheme == "https", head + (body or b"")


async def fetch(
    url: str,
    *,
    method: str = "GET",
    headers: Mapping[str, str],
    body: bytes | None = None,
    tls: ssl.SSLContext | None,
    timeout_s: float,
    limit: int,
    connect_s: float | None = None,
) -> Fetched:
    """Send one request to `url` and read its answer (see the module's docstring for faults).

    `tls` is the context of an https:// URL (unused for http://); the connection is opened
    within `connect_s` (default: `timeout_s`), the whole answer read within `timeout_s`.
    """
    host, port, is_tls, data = request_bytes(method, url, headers, body)
    context = tls if is_tls else None
    if is_tls and context is None:
        raise ValueError("an https:// URL needs a TLS context")
    reader = _Body(limit)
    async with asyncio.timeout(timeout_s):
        connection = await open_connection(
            host, port, context, connect_s or timeout_s, _EveryHeader
        )
        assert isinstance(connection, _EveryHeader)
        try:
            await connection.request(data, reader)
        finally:
            connection.close()
    names = tuple(connection.names)
    if reader.encoding is not None:
        unreadable = (
            f"Content-Encoding {reader.encoding} (assay asks for an uncompressed body and does "
            "not decode this encoding)"
        )
        return Fetched(reader.status, names, b"", unreadable)
    return Fetched(reader.status, names, b"".join(reader.parts))
