"""Requests as prepared bytes: every header that is the same for the whole run is written once.

Per request only the body's length, the request's own headers (its id, its trace context, a
multipart Content-Type) and the body are added.
"""

from __future__ import annotations

from urllib.parse import quote, urlsplit

from assay.spec.endpoint import Endpoint

_DEFAULT_PORTS = {"http": 80, "https": 443}
# What a path may hold unescaped (RFC 3986 pchar and "/"); anything else is percent-encoded.
PATH_SAFE = "/%:@!$&'()*+,;=-._~"


class PreparedRequests:
    """The head of a POST to each endpoint of one server, with the run's fixed headers.

    `headers` are the fixed headers in the order they are sent; a later name replaces an
    earlier one whatever its case (given headers win over assay's own).

    >>> prepared = PreparedRequests("http://127.0.0.1:8000", {"User-Agent": "assay"})
    >>> for line in prepared.build(Endpoint.chat, b"{}", None, None).split(b"\\r\\n"):
    ...     print(line.decode())
    POST /v1/chat/completions HTTP/1.1
    Host: 127.0.0.1:8000
    User-Agent: assay
    Content-Length: 2
    <BLANKLINE>
    {}
    """

    __slots__ = ("_heads", "_sent_type", "host", "port", "tls")

    def __init__(self, root: str, headers: dict[str, str]) -> None:
        parts = urlsplit(root)
        self.tls = parts.scheme == "https"
        self.host = parts.hostname or ""
        self.port = parts.port or _DEFAULT_PORTS[parts.scheme]
        netloc = parts.netloc.rpartition("@")[2]
        merged: dict[str, tuple[str, str]] = {}
        for name, value in headers.items():
            merged[name.lower()] = (name, value)
        # The Content-Type goes last, so a request's own (a multipart upload's) can replace it.
        sent_type = merged.pop("content-type", None)
        self._sent_type = (
            None if sent_type is None else f"{sent_type[0]}: {sent_type[1]}\r\n".encode()
        )
        fixed = "".join(f"{name}: {value}\r\n" for name, value in merged.values())
        prefix = quote(parts.path.rstrip("/"), safe=PATH_SAFE)
        self._heads = {
            endpoint: (
                f"POST {prefix}{endpoint.path} HTTP/1.1\r\nHost: {netloc}\r\n{fixed}"
            ).encode()
            for endpoint in Endpoint
        }

    def build(
        self,
        endpoint: Endpoint,
        body: bytes,
        headers: list[tuple[str, str]] | None,
        content_type: str | None,
    ) -> bytes:
        """The whole request to `endpoint`: head, this request's `headers`, the body."""
        pieces = [self._heads[endpoint]]
        if headers is not None:
            for name, value in headers:  # one or two: a loop, not a generator's frame
                pieces.append(f"{name}: {value}\r\n".encode())
        if content_type is not None:
            pieces.append(f"Content-Type: {content_type}\r\n".encode())
        elif self._sent_type is not None:
            pieces.append(self._sent_type)
        pieces.append(b"Content-Length: %d\r\n\r\n" % len(body))
        pieces.append(body)
        return b"".join(pieces)
