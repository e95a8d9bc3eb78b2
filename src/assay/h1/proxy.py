"""HTTP proxies are refused, with one clear line: assay measures the server, not a proxy.

A proxy between assay and the server adds its own latency, buffering and faults to every figure,
and a proxy that buffers an event stream turns streamed tokens into one burst. So assay connects
directly: when `HTTP_PROXY` / `HTTPS_PROXY` / `ALL_PROXY` (any case) would apply to the server
and `NO_PROXY` does not exempt it, the run stops before the first request and says how to go on.
A loopback server is always reached directly (no proxy can reach this machine's loopback).
"""

from __future__ import annotations

import ipaddress
import os
from collections.abc import Mapping
from urllib.parse import urlsplit

from assay.errors import ServerNotReady


def proxy_for(url: str, proxies: Mapping[str, str] | None = None) -> str | None:
    """The proxy the environment names for `url`, or None when it is reached directly.

    >>> proxy_for("https://api.example.com", {"https": "http://proxy:3128"})
    'http://proxy:3128'
    >>> proxy_for("http://127.0.0.1:8000", {"http": "http://proxy:3128"}) is None
    True
    >>> proxy_for("http://gpu-1:8000", {"http": "http://proxy:3128", "no": "gpu-1"}) is None
    True
    """
    found = environment_proxies(os.environ) if proxies is None else dict(proxies)
    parts = urlsplit(url)
    host = parts.hostname or ""
    if _is_loopback(host):
        return None
    proxy = found.get(parts.scheme) or found.get("all")
    if not proxy:
        return None
    if _exempt(host, parts.port, found.get("no", "")):
        return None
    return proxy


def environment_proxies(environ: Mapping[str, str]) -> dict[str, str]:
    """Scheme -> proxy URL, read from `<scheme>_proxy` variables in any case, a lower-case one
    winning (an empty lower-case one removes it), as `urllib.request.getproxies_environment`
    reads them (also without `HTTP_PROXY` in a CGI script), without importing `urllib.request`.

    >>> environment_proxies({"HTTPS_PROXY": "http://a:1", "https_proxy": "http://b:2"})
    {'https': 'http://b:2'}
    >>> environment_proxies({"ALL_PROXY": "http://a:1", "all_proxy": "", "NO_PROXY": "x"})
    {'no': 'x'}
    >>> environment_proxies({"HTTP_PROXY": "http://a:1", "REQUEST_METHOD": "GET"})
    {}
    """
    proxies: dict[str, str] = {}
    for name, value in environ.items():
        lowered = name.lower()
        if value and lowered[-6:] == "_proxy":
            proxies[lowered[:-6]] = value
    if "REQUEST_METHOD" in environ:
        # A CGI script's HTTP_PROXY may come from a client's "Proxy:" header (CVE-2016-1000110).
        proxies.pop("http", None)
    for name, value in environ.items():
        if name[-6:] == "_proxy":
            if value:
                proxies[name[:-6].lower()] = value
            else:
                proxies.pop(name[:-6].lower(), None)
    return proxies


def _exempt(host: str, port: int | None, no_proxy: str) -> bool:
    """`NO_PROXY` names the host (`*`, the name, a parent domain, with or without a port).

    >>> _exempt("gpu-1.lab", 8000, "other, .lab"), _exempt("gpu-1", 8000, "gpu-1:9000")
    (True, False)
    """
    for entry in no_proxy.replace(" ", "").lower().split(","):
        if entry == "*":
            return True
        name, _, entry_port = entry.partition(":")
        if not name or (entry_port and entry_port != str(port)):
            continue
        name = name.removeprefix(".")
        if host.lower() == name or host.lower().endswith("." + name):
            return True
    return False


def refuse_proxy(url: str, shown_url: str) -> None:
    """Raise `ServerNotReady` when the environment would send requests to `url` via a proxy."""
    proxy = proxy_for(url)
    if proxy is None:
        return
    host = urlsplit(url).hostname
    raise ServerNotReady(
        f"{shown_url} would be reached through the proxy the environment names "
        f"({urlsplit(proxy).hostname}); assay connects to servers directly and does not use "
        f"HTTP proxies: add {host} to NO_PROXY, or unset HTTP_PROXY / HTTPS_PROXY / ALL_PROXY"
    )


def _is_loopback(host: str) -> bool:
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
