"""A side request's URL with user info (`--gpu-metrics http://user:pw@host/metrics`, likewise
`--server-metrics`) sends it as `Authorization: Basic ...`, as aiohttp did before assay's own
transport replaced it: never on the request line, never over an Authorization header given,
and its password masked wherever the run prints or stores the URL. Against loopback servers
that check the header."""

from __future__ import annotations

import asyncio
import base64
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from aiohttp import web

from assay.backend import BackendSettings
from assay.backend.redaction import Redactor, request_secrets
from assay.benchmark.server_observation import observe_server
from assay.config import build_config
from assay.errors import ConfigError
from assay.h1.fetch import fetch
from assay.server_metrics import ServerMetricsObserver
from assay.server_metrics.scrape import Scraped, scrape
from assay.spec.sections import ServerMetrics
from tests.cli.cli_harness import read_report, run_fast
from tests.server_metrics.test_gpu_metrics_url import FakeExporter

USER = "scraper"
PASSWORD = "s3cret-p@ss"  # written %40 in the URL: sent decoded, as curl and aiohttp send it
BASIC = "Basic " + base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()
PAGE = "# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running 0\n"


def with_user_info(url: str) -> str:
    return url.replace("http://", f"http://{USER}:s3cret-p%40ss@", 1)


class Seen:
    """What a guarded server received: each request line's target and Authorization value."""

    def __init__(self) -> None:
        self.targets: list[str] = []
        self.authorizations: list[str | None] = []


@asynccontextmanager
async def guarded_metrics() -> AsyncIterator[tuple[str, Seen]]:
    """A metrics page on 127.0.0.1 that answers 401 to any request without BASIC."""
    seen = Seen()

    async def metrics(request: web.Request) -> web.Response:
        seen.targets.append(request.raw_path)
        seen.authorizations.append(request.headers.get("Authorization"))
        if request.headers.get("Authorization") != BASIC:
            return web.Response(status=401, text="who are you?")
        return web.Response(text=PAGE, content_type="text/plain")

    app = web.Application()
    app.router.add_get("/metrics", metrics)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    try:
        yield f"http://127.0.0.1:{runner.addresses[0][1]}/metrics", seen
    finally:
        await runner.cleanup()


async def test_user_info_is_sent_as_basic_credentials_off_the_request_line() -> None:
    async with guarded_metrics() as (url, seen):
        answer = await fetch(with_user_info(url), headers={}, tls=None, timeout_s=5.0, limit=10_000)
    assert answer.status == 200
    assert answer.body.decode() == PAGE
    assert seen.authorizations == [BASIC]
    assert seen.targets == ["/metrics"]


async def test_an_authorization_header_given_wins_over_the_urls_user_info() -> None:
    async with guarded_metrics() as (url, seen):
        answer = await fetch(
            with_user_info(url),
            headers={"authorization": "Bearer sk-given"},
            tls=None,
            timeout_s=5.0,
            limit=10_000,
        )
    assert answer.status == 401
    assert seen.authorizations == ["Bearer sk-given"]


async def test_a_metrics_page_behind_basic_auth_is_scraped() -> None:
    async with guarded_metrics() as (url, seen):
        scraped = await scrape(with_user_info(url), {}, 5.0)
    assert scraped.problem is None, scraped.problem
    assert "vllm:num_requests_running" in str(scraped.samples)
    assert seen.authorizations == [BASIC]


def test_the_runs_echo_masks_the_password_of_the_metrics_urls() -> None:
    config = build_config(
        {},
        {
            "server_metrics": with_user_info("http://127.0.0.1:9/metrics"),
            "gpu_metrics": with_user_info("http://127.0.0.1:9/gpu"),
        },
    )
    dumped = config.model_dump_json()
    assert "s3cret" not in dumped
    assert f"{USER}:**********@127.0.0.1:9/metrics" in dumped
    assert f"{USER}:**********@127.0.0.1:9/gpu" in dumped
    # The run itself still has the password to send.
    assert config.server_metrics.gpu_url == with_user_info("http://127.0.0.1:9/gpu")


class GuardedExporter(FakeExporter):
    """The fake DCGM exporter, answering 401 to a scrape without BASIC."""

    def __init__(self) -> None:
        super().__init__()
        self.seen = Seen()

    async def _metrics(self, request: web.Request) -> web.StreamResponse:
        self.seen.targets.append(request.raw_path)
        self.seen.authorizations.append(request.headers.get("Authorization"))
        if request.headers.get("Authorization") != BASIC:
            return web.Response(status=401, text="who are you?")
        return await super()._metrics(request)


@pytest.fixture
def guarded_exporter() -> Iterator[GuardedExporter]:
    exporter = GuardedExporter()
    with exporter:
        yield exporter


def test_a_run_scrapes_an_exporter_behind_basic_auth_and_stores_no_password(
    tmp_path: Path, guarded_exporter: GuardedExporter
) -> None:
    url = with_user_info(guarded_exporter.url)
    result = run_fast(
        tmp_path, "--max-requests", "20", "--processes", "1",
        "--server-metrics-interval", "0.1", "--gpu-metrics", url,
    )  # fmt: skip
    assert result.exit_code == 0, result.stderr
    seen = guarded_exporter.seen
    assert seen.authorizations, "no scrape"
    assert set(seen.authorizations) == {BASIC}
    assert set(seen.targets) == {"/metrics"}
    report = read_report(tmp_path)
    assert report.server_metrics is not None
    assert report.server_metrics.gpu_energy_joules is not None
    assert "s3cret" not in result.stdout + result.stderr
    for path in tmp_path.rglob("*"):
        if path.is_file():
            assert b"s3cret" not in path.read_bytes(), path


@asynccontextmanager
async def echoing_metrics(header: str = "Authorization", filler: int = 0) -> AsyncIterator[str]:
    """A page on 127.0.0.1 that answers 200 with the credential it was sent in `header`, not
    metrics: the parser's complaint quotes the last token of its line, the credential's
    (after `filler` characters, a line it quotes whole, the credential across the quote's cut)."""

    async def metrics(request: web.Request) -> web.Response:
        sent = request.headers.get(header, "none")
        if filler:  # an invalid name, which the parser quotes whole, credential included
            return web.Response(text=f"{'-' * filler}auth={sent}\n", content_type="text/plain")
        return web.Response(text=f"sent {sent.split()[-1]}\n", content_type="text/plain")

    app = web.Application()
    app.router.add_get("/metrics", metrics)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    try:
        yield f"http://127.0.0.1:{runner.addresses[0][1]}/metrics"
    finally:
        await runner.cleanup()


async def scraped_cleaned(url: str) -> tuple[Scraped, ServerMetricsObserver]:
    """One scrape of `url` by an observer that cleans its problems of what it sends."""
    observer = ServerMetricsObserver(
        url, timeout_s=5.0, clean=Redactor(request_secrets(url, {})).clean
    )
    with observer:
        return await asyncio.to_thread(observer.scrape_now), observer


async def test_a_scrape_problem_quoting_the_credentials_sent_is_masked() -> None:
    token = BASIC.split()[1]
    async with echoing_metrics() as url:
        raw = await scrape(with_user_info(url), {}, 5.0)
        assert raw.problem is not None
        assert token in raw.problem  # what the page made the parser say
        first, observer = await scraped_cleaned(with_user_info(url))
    assert first.problem is not None
    assert "not Prometheus metrics" in first.problem
    assert token not in first.problem
    assert PASSWORD not in first.problem
    assert observer.problems == (first.problem,)


def test_a_run_refusing_a_metrics_page_that_echoes_credentials_prints_none(
    tmp_path: Path,
) -> None:
    token = BASIC.split()[1]

    async def refused() -> tuple[int, str]:
        async with echoing_metrics() as url:
            result = await asyncio.to_thread(
                run_fast, tmp_path, "--max-requests", "2", "--server-metrics", with_user_info(url)
            )
        return result.exit_code, result.stdout + result.stderr

    code, said = asyncio.run(refused())
    assert code == 2, said
    assert "--server-metrics: GET" in said
    assert "not Prometheus metrics" in said
    assert token not in said
    assert "s3cret" not in said


async def test_a_credential_across_the_quotes_cut_leaves_no_head_behind() -> None:
    # The quote is cut at 200 characters: cleaned after the cut, the token's head survived.
    token = BASIC.split()[1]
    async with echoing_metrics(filler=150) as url:
        first, _ = await scraped_cleaned(with_user_info(url))
    assert first.problem is not None
    assert "not Prometheus metrics" in first.problem
    assert token[:8] not in first.problem


async def test_a_same_origin_page_echoing_the_targets_key_names_it_masked() -> None:
    key = "sk-target-key-0123456789"
    async with echoing_metrics("X-Api-Key") as url:
        origin = url.removesuffix("/metrics")
        backend = BackendSettings(base_url=origin, headers={"X-Api-Key": key})
        metrics = ServerMetrics(url=url)

        def first_scrape() -> str:
            with pytest.raises(ConfigError) as refused, observe_server(metrics, backend, print):
                pass
            return str(refused.value)

        said = await asyncio.to_thread(first_scrape)
    assert said.startswith("--server-metrics: GET")
    assert "not Prometheus metrics" in said
    assert key[:8] not in said
