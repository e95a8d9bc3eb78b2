"""Before the load: is a known proxy answering at the target? Then the run says so (issue 38:
through LiteLLM cut streams completed, VALID, exit 0, and assay said nothing)."""

from __future__ import annotations

from collections.abc import Callable

from assay.backend.proxies import seen_proxy
from assay.backend.settings import BackendSettings
from assay.spec.proxy import SeenProxy
from assay.spec.target import Target


def proxy_in_front(
    target: Target, backend: BackendSettings, note: Callable[[str], None]
) -> SeenProxy | None:
    """The proxy answering at a real target, noted in the run's notes; None for the embedded
    mock, with `--no-probe` (no request before the load), or when none is seen."""
    if target.url is None or not target.probe:
        return None
    proxy = seen_proxy(backend, target.endpoint)
    if proxy is not None:
        note(proxy.note())
    return proxy


__all__ = ["proxy_in_front"]
