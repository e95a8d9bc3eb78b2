"""A DCGM exporter that cannot be trusted (issue 39, cost and energy): values that are no finite
number, a counter that goes back, GPUs that come and go or answer NaN between scrapes, a page
that is no Prometheus text, slow or redirecting. The run never hangs nor crashes on it, and an
energy it cannot know is null with a note, never a wrong figure."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from aiohttp import web

from assay.server_metrics import StepBounds, TimedSample, parse_exposition
from assay.server_metrics.gpu_energy import GpuScrapes, dcgm_only, energy_joules
from assay.server_metrics.observer import MAX_PROBLEMS, ServerMetricsObserver
from assay.server_metrics.summary import summarize_gpus
from tests.cli.cli_harness import run_fast
from tests.cli.test_cli_bad_input import assert_one_error_line

S = 1_000_000_000
ENERGY = "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"
POWER = "DCGM_FI_DEV_POWER_USAGE"


def _page(energies: list[str], powers: list[str] | None = None) -> str:
    """An exporter's page with a series per GPU of each value given ("NaN", "+Inf" included)."""
    lines = [f"# TYPE {ENERGY} counter"]
    lines += [f'{ENERGY}{{gpu="{i}"}} {value}' for i, value in enumerate(energies)]
    if powers is not None:
        lines.append(f"# TYPE {POWER} gauge")
        lines += [f'{POWER}{{gpu="{i}"}} {value}' for i, value in enumerate(powers)]
    return "\n".join(lines) + "\n"


def _scrapes(*pages: str) -> GpuScrapes:
    """The pages as scrapes one second apart, kept as the run keeps an exporter's."""
    samples = tuple(TimedSample(t * S, parse_exposition(page)) for t, page in enumerate(pages))
    return GpuScrapes("http://g/metrics", dcgm_only(samples))


def _energy(gpus: GpuScrapes) -> float | None:
    report = summarize_gpus(gpus, 1.0, [StepBounds(0, 0, (len(gpus.samples) - 1) * S)])
    assert report is not None
    assert report.gpu_energy_joules == report.steps[0].gpu_energy_joules
    return report.gpu_energy_joules


def test_two_gpus_counted_alike_give_the_energy() -> None:
    gpus = _scrapes(_page(["1000", "1000"]), _page(["3000", "5000"]))
    assert _energy(gpus) == pytest.approx(6.0)
    assert gpus.notes() == ()


@pytest.mark.parametrize(
    ("pages", "words"),
    [
        # A GPU that answered NaN at the first scrape: its whole counter since boot would count.
        ((_page(["NaN", "1000"]), _page(["9000000", "2000"])), "no finite number"),
        # One that answers NaN at every scrape: the others' energy alone would be too small.
        ((_page(["NaN", "1000"]), _page(["NaN", "2000"])), "no finite number"),
        # A GPU that appears (an exporter restarted with one more) likewise.
        ((_page(["1000"]), _page(["2000", "9000000"])), "number of GPUs"),
        ((_page(["1000", "1000"]), _page(["2000", "+Inf"])), "no finite number"),
        ((_page(["-Inf", "1000"]), _page(["2000", "2000"])), "no finite number"),
        ((_page(["5000", "5000"]), _page(["1000", "1000"])), "went back"),
    ],
)
def test_energy_it_cannot_trust_is_null_with_a_note(pages: tuple[str, ...], words: str) -> None:
    gpus = _scrapes(*pages)
    assert _energy(gpus) is None
    assert any(words in note for note in gpus.notes()), gpus.notes()


def test_a_power_gauge_that_is_infinite_or_negative_gives_no_energy() -> None:
    for bad in ("+Inf", "-250"):
        gpus = _scrapes(
            _page([], ["250", "250"]), _page([], ["250", bad]), _page([], ["250", "250"])
        )
        assert _energy(gpus) is None, bad
        assert any("no finite number" in note for note in gpus.notes())


def test_a_gpu_that_drops_out_of_the_power_gauge_gives_no_energy() -> None:
    gpus = _scrapes(_page([], ["250", "250"]), _page([], ["250"]))
    assert _energy(gpus) is None
    steady = _scrapes(_page([], ["250", "250"]), _page([], ["250", "250"]))
    assert _energy(steady) == pytest.approx(500.0)


def test_a_reset_counter_falls_back_to_the_power_of_the_same_gpus() -> None:
    samples = [
        TimedSample(0, parse_exposition(_page(["5000"], ["100"]))),
        TimedSample(2 * S, parse_exposition(_page(["10"], ["300"]))),
    ]
    assert energy_joules(samples, 0, 2 * S) == pytest.approx(400.0)


class _Hostile:
    """An exporter on 127.0.0.1 whose /metrics answers as `answer` says, in a thread."""

    def __init__(self, answer: Callable[[web.Request], object]) -> None:
        self._answer = answer
        self._ready = threading.Event()
        self._loop = asyncio.new_event_loop()
        self._stop: asyncio.Event | None = None
        self.url = ""
        self._thread = threading.Thread(target=self._loop.run_until_complete, args=(self._serve(),))

    async def _metrics(self, request: web.Request) -> web.StreamResponse:
        answer = self._answer(request)
        assert asyncio.iscoroutine(answer)
        response = await answer
        assert isinstance(response, web.StreamResponse)
        return response

    async def _serve(self) -> None:
        self._stop = asyncio.Event()
        app = web.Application()
        app.router.add_get("/metrics", self._metrics)
        runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.1)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        self.url = f"http://127.0.0.1:{runner.addresses[0][1]}/metrics"
        self._ready.set()
        try:
            await self._stop.wait()
        finally:
            await runner.cleanup()

    def __enter__(self) -> _Hostile:
        self._thread.start()
        assert self._ready.wait(10)
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._stop is not None
        self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(10)
        self._loop.close()


async def _endless(request: web.Request) -> web.StreamResponse:
    response = web.StreamResponse(headers={"Content-Type": "text/plain"})
    await response.prepare(request)
    line = f'{ENERGY}{{gpu="0"}} 1000\n'.encode() * 1000
    for _ in range(100_000):  # bounded, yet far past any scraper's limit
        await response.write(line)
    return response


async def _slow(request: web.Request) -> web.StreamResponse:
    await asyncio.sleep(30)
    return web.Response(text=_page(["1"]))


async def _redirect(request: web.Request) -> web.StreamResponse:
    # Another host's page: a scraper that followed would read (and send) where it was not told.
    raise web.HTTPFound("http://127.0.0.2:9/metrics")


async def _login_page(request: web.Request) -> web.StreamResponse:
    return web.Response(text="<html>" + "x" * 100_000 + " 1 \x1b[2J</html>\n")


@pytest.fixture
def hostile(request: pytest.FixtureRequest) -> Iterator[_Hostile]:
    with _Hostile(request.param) as server:
        yield server


@pytest.mark.parametrize(
    ("hostile", "words"),
    [
        (_endless, "larger than"),
        (_slow, "TimeoutError"),
        (_redirect, "HTTP 302"),
        (_login_page, "not Prometheus metrics"),
    ],
    indirect=["hostile"],
)
def test_an_exporter_that_answers_badly_at_the_start_is_one_error_line(
    tmp_path: Path, hostile: _Hostile, words: str
) -> None:
    result = run_fast(
        tmp_path / "run", "--max-requests", "2", "--gpu-metrics", hostile.url,
        "--timeout-connect", "1",
    )  # fmt: skip
    assert_one_error_line(result, "--gpu-metrics", words)
    assert len(result.stderr) < 1000  # the page is not quoted whole


def test_credentials_of_the_target_are_not_sent_to_the_exporter(tmp_path: Path) -> None:
    seen: list[dict[str, str]] = []
    calls = 0

    async def exporter(request: web.Request) -> web.StreamResponse:
        nonlocal calls
        calls += 1
        seen.append(dict(request.headers))
        return web.Response(text=_page([str(1000 * calls)]))

    with _Hostile(exporter) as server:
        result = run_fast(
            tmp_path / "run", "--max-requests", "10", "--gpu-metrics", server.url,
            "--header", "Authorization: Bearer sk-secret-of-the-target",
            "--header", "X-Tenant: secret-tenant",
            "--server-metrics-interval", "0.1",
        )  # fmt: skip
    assert result.exit_code == 0, result.stderr
    assert seen
    for headers in seen:
        said = " ".join(f"{k}: {v}" for k, v in headers.items())
        assert "secret" not in said
        assert "Authorization" not in headers


def test_an_exporter_whose_every_scrape_fails_anew_keeps_a_bounded_list_of_problems() -> None:
    calls = 0

    async def garbage(request: web.Request) -> web.StreamResponse:
        nonlocal calls
        calls += 1
        return web.Response(text=f"metric {calls}{'y' * 10_000}\n")

    with (
        _Hostile(garbage) as server,
        ServerMetricsObserver(server.url, interval_s=3600, timeout_s=2) as observer,
    ):
        for _ in range(MAX_PROBLEMS + 10):
            observer.scrape_now()
        problems = observer.problems
    assert len(problems) == MAX_PROBLEMS + 1
    assert problems[-1].endswith("more problems, not kept")
    assert max(len(problem) for problem in problems) < 400


def test_a_page_that_arrives_in_pieces_is_read_to_its_end() -> None:
    """One read returns what has arrived so far: a long page sent in two pieces was parsed as
    its first piece alone (its last lines, here the energy, cut off or cut mid-number)."""

    async def in_pieces(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "text/plain"})
        await response.prepare(request)
        await response.write(b"".join(b'filler{i="%d"} 1\n' % i for i in range(20_000)))
        await asyncio.sleep(0.3)
        await response.write(f'{ENERGY}{{gpu="0"}} 123456\n'.encode())
        return response

    with (
        _Hostile(in_pieces) as server,
        ServerMetricsObserver(server.url, interval_s=3600, timeout_s=5) as observer,
    ):
        scraped = observer.scrape_now()
    assert scraped.problem is None
    assert scraped.samples["filler"] == 20_000
    assert scraped.samples[ENERGY] == 123456
