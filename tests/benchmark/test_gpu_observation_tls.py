"""`--gpu-metrics` over HTTPS verifies TLS as the requests do: a certificate trusted nowhere is
one `ConfigError` naming the flag, the `--ca-bundle` is trusted, `--insecure` skips the check.
Loopback only; the certificates are made for the test by `openssl`."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.benchmark.https_page import https_page

from assay.backend import BackendSettings
from assay.benchmark.gpu_observation import observe_gpus
from assay.errors import ConfigError
from assay.spec.sections import ServerMetrics

pytestmark = pytest.mark.skipif(shutil.which("openssl") is None, reason="needs openssl")


@pytest.fixture
def https_exporter(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """A DCGM exporter over HTTPS on loopback, and the certificate it presents."""
    with https_page(
        tmp_path, b'# TYPE DCGM_FI_DEV_POWER_USAGE gauge\nDCGM_FI_DEV_POWER_USAGE{gpu="0"} 80\n'
    ) as served:
        yield served


def _observed(url: str, backend: BackendSettings) -> bool:
    with observe_gpus(ServerMetrics(url="off", gpu_url=url), backend, lambda _: None) as seen:
        return seen is not None


def test_an_exporter_trusted_nowhere_is_refused(https_exporter: tuple[str, Path]) -> None:
    url, _ = https_exporter
    with pytest.raises(ConfigError, match="--gpu-metrics"):
        _observed(url, BackendSettings(base_url="https://127.0.0.1:9"))


def test_the_ca_bundle_is_trusted(https_exporter: tuple[str, Path]) -> None:
    url, cert = https_exporter
    assert _observed(url, BackendSettings(base_url="https://127.0.0.1:9", ca_bundle=cert))


def test_insecure_skips_verification(https_exporter: tuple[str, Path]) -> None:
    url, _ = https_exporter
    assert _observed(url, BackendSettings(base_url="https://127.0.0.1:9", verify_tls=False))
