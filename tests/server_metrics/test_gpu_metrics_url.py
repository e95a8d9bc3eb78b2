"""`--gpu-metrics URL`: a DCGM exporter scraped beside the server's metrics, its samples the only
source of the GPUs' energy (issue 39, cost and energy). End to end against a fake exporter on
127.0.0.1 whose energy counters grow with every scrape."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from aiohttp import web

from assay.server_metrics import AssayCounts, StepBounds, TimedSample, summarize
from assay.server_metrics.gpu_energy import DCGM_ENERGY_MJ, DCGM_POWER_W, GpuScrapes, dcgm_only
from assay.server_metrics.summary import summarize_gpus
from tests.backend.backend_loopback import unused_port_url
from tests.cli.cli_harness import assay_mock, read_report, run_assay, run_fast
from tests.cli.test_cli_bad_input import assert_one_error_line

S = 1_000_000_000
NOTHING = AssayCounts(answered=0, unfinished=0, output_tokens=0, max_output_tokens=0)


class FakeExporter:
    """A DCGM exporter with two GPUs whose energy counters rise 1 J each per scrape, on a free
    loopback port in a thread of its own; past `answers` scrapes it drops every connection."""

    def __init__(self, answers: int | None = None) -> None:
        self.scrapes = 0
        self._answers = answers
        self._ready = threading.Event()
        self._loop = asyncio.new_event_loop()
        self._stop: asyncio.Event | None = None
        self.url = ""
        self._thread = threading.Thread(target=self._loop.run_until_complete, args=(self._serve(),))

    async def _metrics(self, request: web.Request) -> web.StreamResponse:
        if self._answers is not None and self.scrapes >= self._answers:
            assert request.transport is not None
            request.transport.abort()  # gone: the scraper reads a dropped connection
            return web.Response(status=500)
        self.scrapes += 1
        millijoules = 1000.0 * self.scrapes
        text = (
            "# TYPE DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION counter\n"
            f'DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{{gpu="0"}} {millijoules}\n'
            f'DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{{gpu="1"}} {millijoules}\n'
            "# TYPE DCGM_FI_DEV_POWER_USAGE gauge\n"
            'DCGM_FI_DEV_POWER_USAGE{gpu="0"} 250\nDCGM_FI_DEV_POWER_USAGE{gpu="1"} 250\n'
            # A series of another family on the exporter's page is never read.
            "# TYPE vllm:request_success_total counter\nvllm:request_success_total 1e9\n"
        )
        return web.Response(text=text, content_type="text/plain")

    async def _serve(self) -> None:
        self._stop = asyncio.Event()
        app = web.Application()
        app.router.add_get("/metrics", self._metrics)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port = runner.addresses[0][1]
        self.url = f"http://127.0.0.1:{port}/metrics"
        self._ready.set()
        try:
            await self._stop.wait()
        finally:
            await runner.cleanup()

    def __enter__(self) -> FakeExporter:
        self._thread.start()
        assert self._ready.wait(10)
        return self

    def __exit__(self, *exc: object) -> None:
        stop = self._stop
        assert stop is not None
        self._loop.call_soon_threadsafe(stop.set)
        self._thread.join(10)
        self._loop.close()


def assert_energy_of_the_exporters_scrapes(joules: float | None, exporter: FakeExporter) -> None:
    """`joules` is 2 J (two GPUs, 1 J each) per scrape the run kept after the exporter's first;
    the exporter may have been scraped once or twice more while the run closed its observer."""
    assert joules is not None
    kept = joules / 2 + 1
    assert kept == round(kept)
    assert 5 <= kept <= exporter.scrapes <= kept + 2


@pytest.fixture
def exporter() -> Iterator[FakeExporter]:
    with FakeExporter() as fake:
        yield fake


def test_only_the_exporters_dcgm_series_are_kept() -> None:
    kept = dcgm_only([TimedSample(0, {DCGM_POWER_W: 80.0, DCGM_ENERGY_MJ: 5.0, "vllm:x": 1.0})])
    assert kept == (TimedSample(0, {DCGM_POWER_W: 80.0, DCGM_ENERGY_MJ: 5.0}),)


def test_with_an_exporter_the_energy_is_the_exporters_not_the_servers() -> None:
    server = [TimedSample(t * S, {DCGM_ENERGY_MJ: 1e9 * t, "vllm:x": 0.0}) for t in range(3)]
    gpus = GpuScrapes("http://g/metrics", tuple(TimedSample(t * S, {DCGM_ENERGY_MJ: 5000.0 * t})
                                                for t in range(3)))  # fmt: skip
    report = summarize(
        url="http://s/metrics", interval_s=1.0, samples=server, first=server[0], last=server[-1],
        steps=[StepBounds(0, 0, S)], assay=NOTHING, gpus=gpus,
    )  # fmt: skip
    assert report.gpu_energy_joules == pytest.approx(10.0)
    assert report.steps[0].gpu_energy_joules == pytest.approx(5.0)
    assert report.gpu_url == "http://g/metrics"


def test_an_interval_the_exporters_scrapes_do_not_bracket_has_no_energy() -> None:
    # The exporter stopped answering after 1 s: what came after is not counted as nothing.
    samples = tuple(TimedSample(t * S, {DCGM_ENERGY_MJ: 1000.0 * t}) for t in range(2))
    gpus = GpuScrapes("http://g/metrics", samples, ("GET http://g/metrics failed: X",))
    report = summarize_gpus(gpus, 1.0, [StepBounds(0, 0, S), StepBounds(1, S, 3 * S)])
    assert report is not None
    assert [step.gpu_energy_joules for step in report.steps] == [pytest.approx(1.0), None]
    assert report.problems == ("GET http://g/metrics failed: X",)


def test_an_exporter_without_dcgm_samples_is_a_problem_in_the_report() -> None:
    gpus = GpuScrapes("http://g/metrics", (TimedSample(0, {}), TimedSample(S, {})))
    report = summarize_gpus(gpus, 1.0, [StepBounds(0, 0, S)])
    assert report is not None
    assert report.gpu_energy_joules is None
    assert any("no DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION" in p for p in report.problems)


def test_a_run_reads_the_gpus_energy_from_the_exporter_beside_the_servers_metrics(
    tmp_path: Path, exporter: FakeExporter
) -> None:
    result = run_fast(
        tmp_path, "--max-requests", "60", "--concurrency", "2", "--processes", "1",
        "--mock-itl-ms", "5", "--server-metrics-interval", "0.1",
        "--gpu-metrics", exporter.url,
    )  # fmt: skip
    assert result.exit_code == 0, result.stderr
    assert f"GPU metrics: {exporter.url}, every 0.1 s" in result.stdout
    report = read_report(tmp_path)
    server = report.server_metrics
    assert server is not None
    # The server's own metrics are still the embedded mock's, cross-checked as before ...
    assert server.kind is not None
    assert server.kind.value == "vllm"
    assert all(check.agrees for check in server.checks), server.checks
    assert server.problems == ()
    # ... and the energy is the exporter's: 2 J (two GPUs) per scrape after its first.
    assert server.gpu_url == exporter.url
    run_energy = server.gpu_energy_joules
    assert_energy_of_the_exporters_scrapes(run_energy, exporter)
    assert run_energy is not None
    [step] = report.steps
    assert step.cost is not None
    energy = step.cost.energy_joules
    assert energy is not None
    assert 0 < energy <= run_energy
    usable = step.metrics.throughput.usable_output_tokens
    assert step.cost.joules_per_usable_output_token == pytest.approx(energy / usable)
    assert "per usable output token" in result.stdout
    assert f"GPU energy from {exporter.url}" in result.stdout
    assert report.run_config["gpu_metrics"] == exporter.url


def test_the_config_file_key_scrapes_the_exporter_without_the_servers_metrics(
    tmp_path: Path, exporter: FakeExporter
) -> None:
    config = tmp_path / "assay.toml"
    config.write_text(
        f'gpu_metrics = "{exporter.url}"\nserver_metrics = "off"\n'
        "server_metrics_interval = 0.1\nmax_requests = 40\nprocesses = 1\nconcurrency = 2\n"
        'mock_itl_ms = 5\noutput_tokens = "16"\n'
        f'output_dir = "{tmp_path / "run"}"\n'
    )
    result = run_assay("run", "--config", config)
    assert result.exit_code == 0, result.stderr
    assert f"GPU metrics ({exporter.url}, " in result.stdout
    assert "nothing to cross-check" not in result.stdout
    report = read_report(tmp_path / "run")
    server = report.server_metrics
    assert server is not None
    assert server.kind is None  # the exporter's vllm: series are not read
    assert server.run.requests_finished is None
    assert server.url == server.gpu_url == exporter.url
    assert server.problems == ()
    assert_energy_of_the_exporters_scrapes(server.gpu_energy_joules, exporter)
    assert report.steps[0].cost is not None
    assert report.steps[0].cost.joules_per_usable_output_token is not None
    assert report.run_config["gpu_metrics"] == exporter.url


def test_an_exporter_that_stops_answering_mid_run_is_a_problem_not_a_crash(
    tmp_path: Path,
) -> None:
    with FakeExporter(answers=3) as dying:
        result = run_fast(
            tmp_path, "--max-requests", "60", "--concurrency", "2", "--processes", "1",
            "--mock-itl-ms", "5", "--server-metrics-interval", "0.1", "--gpu-metrics", dying.url,
        )  # fmt: skip
    assert result.exit_code == 0, result.stderr
    assert "Traceback" not in result.stdout + result.stderr
    server = read_report(tmp_path).server_metrics
    assert server is not None
    assert any(p.startswith(f"GET {dying.url} failed") for p in server.problems), server.problems
    assert f"note: GET {dying.url} failed" in result.stdout
    # Its last scrape came before the load ended: the run's energy is unknown, not too small.
    assert server.gpu_energy_joules is None
    assert all(check.agrees for check in server.checks)  # the server's own metrics go on


@pytest.mark.parametrize(
    ("url", "words"),
    [
        ("ftp://127.0.0.1:9400/metrics", ("--gpu-metrics", "http(s) URL", "ftp://")),
        ("127.0.0.1:9400", ("--gpu-metrics", "http(s) URL")),
    ],
)
def test_a_gpu_metrics_value_that_is_no_url_is_one_error_line(
    tmp_path: Path, url: str, words: tuple[str, ...]
) -> None:
    result = run_fast(tmp_path / "run", "--max-requests", "2", "--gpu-metrics", url)
    assert_one_error_line(result, *words)


def test_an_exporter_that_does_not_answer_at_the_start_is_one_error_line(tmp_path: Path) -> None:
    url = unused_port_url() + "/metrics"
    result = run_fast(tmp_path / "run", "--max-requests", "2", "--gpu-metrics", url)
    assert_one_error_line(result, "--gpu-metrics", "failed")


def test_a_page_without_dcgm_samples_is_one_error_line(tmp_path: Path) -> None:
    with assay_mock() as mock:  # vLLM's metric names, no GPU's
        result = run_fast(
            tmp_path / "run", "--max-requests", "2", "--gpu-metrics", f"{mock}/metrics"
        )
    assert_one_error_line(result, "--gpu-metrics", "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION")
