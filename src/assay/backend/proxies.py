"""Which proxy answers at the target, told by the headers it adds to its answers (LiteLLM:
`x-litellm-*`), and what it is known to hide (measured with `scripts/conformance-proxy`).

LiteLLM 1.108.7 marks the answers of the endpoints it routes, not its `/v1/models`: assay asks
with one empty JSON body (`{}`) POSTed to the run's endpoint before the load, which every server
refuses (400/422) without generating anything, and a proxy refuses it with its marks on.
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final

from assay.backend.settings import BackendSettings
from assay.h1.connection import WireFault
from assay.h1.fetch import fetch
from assay.h1.pool import ConnectFailure, tls_context
from assay.spec.endpoint import Endpoint
from assay.spec.proxy import SeenProxy

# A body no server generates anything for (no model, no input).
_EMPTY_BODY: Final = b"{}"
# Only the head is read: of the body, no more than this.
_BODY_READ: Final = 64 * 1024


@dataclass(frozen=True, slots=True)
class KnownProxy:
    """A proxy assay knows: the prefix of the headers it adds, and what it hides."""

    name: str
    header_prefix: str
    hides: tuple[str, ...]


# LiteLLM 1.108.7 (docs/servers.md, "Proxies in front of a server").
LITELLM: Final = KnownProxy(
    name="LiteLLM",
    header_prefix="x-litellm-",
    hides=(
        "a chat stream the server cut arrives complete (with a finish_reason, a usage and "
        "[DONE] of the proxy's own)",
        "on /v1/responses malformed chunks are dropped and the answer completes without them",
        "a dropped connection, an error event or a chunk that is not JSON becomes an in-band "
        "error (inband_error)",
        "an empty body or an HTML page becomes an empty answer (empty_response)",
        "HTTP 429 and 500 are retried twice: the server gets up to three requests for each one "
        "assay sent",
    ),
)
KNOWN_PROXIES: Final = (LITELLM,)


def proxy_of_headers(names: Iterable[str]) -> SeenProxy | None:
    """The known proxy whose headers are among `names` (response header names), if any.

    >>> proxy_of_headers(["Content-Type", "x-litellm-call-id", "x-litellm-version"]).evidence
    'x-litellm-call-id, x-litellm-version'
    >>> proxy_of_headers(["content-type", "x-request-id"]) is None
    True
    """
    lowered = sorted({name.lower() for name in names})
    for proxy in KNOWN_PROXIES:
        shown = [name for name in lowered if name.startswith(proxy.header_prefix)]
        if shown:
            return SeenProxy(name=proxy.name, evidence=", ".join(shown[:3]), hides=proxy.hides)
    return None


async def detect_proxy(settings: BackendSettings, endpoint: Endpoint) -> SeenProxy | None:
    """The known proxy that answers an empty request to `endpoint` at the target, told by its
    headers; None when none is known there or the request fails (readiness and the probe say
    what failed)."""
    headers = {**settings.headers, "Content-Type": "application/json"}
    authorization = settings.authorization()
    if authorization is not None:
        headers.setdefault("Authorization", authorization)
    tls = tls_context(_tls_of(settings)) if settings.request_root.startswith("https:") else None
    try:
        answer = await fetch(
            settings.request_root + endpoint.path,
            method="POST",
            headers=headers,
            body=_EMPTY_BODY,
            tls=tls,
            timeout_s=settings.timeouts.connect_s + 5.0,
            limit=_BODY_READ,
        )
    except (ConnectFailure, WireFault, TimeoutError, OSError, ValueError):
        return None
    return proxy_of_headers(answer.header_names)


def _tls_of(settings: BackendSettings) -> bool | ssl.SSLContext:
    if not settings.verify_tls:
        return False
    if settings.ca_bundle is not None:
        return ssl.create_default_context(cafile=str(settings.ca_bundle))
    return True


def seen_proxy(settings: BackendSettings, endpoint: Endpoint) -> SeenProxy | None:
    """`detect_proxy` from synchronous code (before the load starts)."""
    return asyncio.run(detect_proxy(settings, endpoint))


__all__ = [
    "KNOWN_PROXIES",
    "LITELLM",
    "KnownProxy",
    "detect_proxy",
    "proxy_of_headers",
    "seen_proxy",
]
