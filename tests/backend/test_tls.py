"""A certificate the client does not trust is named as such, with the two ways out, and
`ca_bundle` / `verify_tls=False` are those ways (issue 10 item 9). Loopback only; the
self-signed certificate is made for the test by the `openssl` command."""

from __future__ import annotations

import shutil
import ssl
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from aiohttp import web

from assay.backend import BackendSettings, check_ready
from assay.core import DiagnosticCode
from assay.errors import ServerNotReady
from tests.backend.test_transport_faults import failure_of, resolve_once

pytestmark = pytest.mark.skipif(shutil.which("openssl") is None, reason="needs openssl")


def self_signed(directory: Path) -> tuple[Path, Path]:
    cert, key = directory / "cert.pem", directory / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
         "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
         "-keyout", str(key), "-out", str(cert)],
        check=True, capture_output=True, timeout=60,
    )  # fmt: skip
    return cert, key


@pytest.fixture
async def tls_server(tmp_path: Path) -> AsyncIterator[tuple[str, Path]]:
    cert, key = self_signed(tmp_path)
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)

    async def models(request: web.Request) -> web.Response:
        return web.json_response({"object": "list", "data": [{"id": "tls-model"}]})

    app = web.Application()
    app.router.add_get("/v1/models", models)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=context)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]  # started
    try:
        yield f"https://127.0.0.1:{port}", cert
    finally:
        await runner.cleanup()


async def test_untrusted_certificate_says_verify_failed_and_the_ways_out(
    tls_server: tuple[str, Path],
) -> None:
    url, _ = tls_server
    with pytest.raises(ServerNotReady) as raised:
        await check_ready(BackendSettings(base_url=url))
    message = str(raised.value)
    assert "certificate verify failed: self-signed certificate" in message
    assert "--ca-bundle" in message
    assert "--insecure" in message
    assert "operation not permitted" not in message


async def test_untrusted_certificate_on_a_request_is_connect_error_in_words(
    tls_server: tuple[str, Path],
) -> None:
    url, _ = tls_server
    unusable = failure_of(await resolve_once(BackendSettings(base_url=url)))
    assert unusable.code is DiagnosticCode.connect_error
    assert "certificate verify failed" in unusable.message


async def test_ca_bundle_trusts_the_server(tls_server: tuple[str, Path]) -> None:
    url, cert = tls_server
    assert await check_ready(BackendSettings(base_url=url, ca_bundle=cert)) == "tls-model"


async def test_insecure_skips_verification(tls_server: tuple[str, Path]) -> None:
    url, _ = tls_server
    assert await check_ready(BackendSettings(base_url=url, verify_tls=False)) == "tls-model"


async def test_ca_bundle_that_is_not_a_certificate_is_a_clear_error(tmp_path: Path) -> None:
    bogus = tmp_path / "ca.pem"
    bogus.write_text("not a certificate", encoding="utf-8")
    with pytest.raises(ServerNotReady, match=r"--ca-bundle .*not a readable PEM"):
        await check_ready(BackendSettings(base_url="https://127.0.0.1:9", ca_bundle=bogus))
