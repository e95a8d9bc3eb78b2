"""The server-metrics scrapes verify TLS as the requests do: the system's CAs and the
`--ca-bundle` together (they once trusted the bundle alone, so a metrics endpoint with a
publicly trusted certificate failed as soon as a bundle was given). Loopback only; the
certificates are made for the test by `openssl`, the "system" CAs are `SSL_CERT_FILE`."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.backend.test_tls import self_signed
from tests.benchmark.https_page import https_page

from assay.backend import BackendSettings
from assay.benchmark.server_observation import observe_server
from assay.errors import ConfigError
from assay.spec.sections import ServerMetrics

pytestmark = pytest.mark.skipif(shutil.which("openssl") is None, reason="needs openssl")


@pytest.fixture
def https_metrics(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """An HTTPS /metrics on loopback, and the certificate it presents."""
    with https_page(
        tmp_path, b"# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running 0\n"
    ) as served:
        yield served


def _observed(url: str, backend: BackendSettings) -> bool:
    with observe_server(ServerMetrics(url=url), backend, lambda _: None) as observer:
        return observer is not None


def test_scrapes_trust_the_system_cas_besides_the_ca_bundle(
    https_metrics: tuple[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url, cert = https_metrics
    monkeypatch.setenv("SSL_CERT_FILE", str(cert))  # the metrics server's CA is a system CA
    other = tmp_path / "other"
    other.mkdir()
    bundle, _ = self_signed(other)  # the bundle holds another CA only
    backend = BackendSettings(base_url="https://127.0.0.1:9", ca_bundle=bundle)
    assert _observed(url, backend)


def test_scrapes_refuse_a_certificate_trusted_nowhere(https_metrics: tuple[str, Path]) -> None:
    url, _ = https_metrics
    with pytest.raises(ConfigError, match="--server-metrics"):
        _observed(url, BackendSettings(base_url="https://127.0.0.1:9"))


def test_insecure_scrapes_skip_verification(https_metrics: tuple[str, Path]) -> None:
    url, _ = https_metrics
    assert _observed(url, BackendSettings(base_url="https://127.0.0.1:9", verify_tls=False))
