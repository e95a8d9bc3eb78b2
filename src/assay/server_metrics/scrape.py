"""One scrape of a Prometheus text endpoint, parsed by `prometheus_client`'s own parser."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from prometheus_client.parser import text_string_to_metric_families

if TYPE_CHECKING:
    # Imported where a scrape runs: reading a stored report (`ServerMetricsReport`) must not
    # import the HTTP client.
    import aiohttp

# A metrics page far larger than any server's is not read to the end: memory stays bounded.
MAX_METRICS_BYTES = 8 << 20
# How much of the parser's complaint a problem quotes: it may quote the page, whatever its size.
_MOST_QUOTED = 200

# The series counted per scrape beside their sum (`series_name`): the DCGM exporter's energy
# counter and power gauge, one series per GPU. A GPU that appears, vanishes or answers NaN
# between two scrapes changes the sum by far more than the energy used in between.
DCGM_ENERGY_MJ: Final = "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"
DCGM_POWER_W: Final = "DCGM_FI_DEV_POWER_USAGE"
# The exposition parser names a sample of a `counter` family with `_total` appended.
DCGM_ENERGY_NAMES: Final = (DCGM_ENERGY_MJ, DCGM_ENERGY_MJ + "_total")
_COUNTED: Final = frozenset((*DCGM_ENERGY_NAMES, DCGM_POWER_W))


def series_name(name: str) -> str:
    """The key of a scrape's samples that holds how many series of `name` were summed (with a
    value, not NaN); a space is in no Prometheus name, so it names no metric."""
    return f"{name} series"


@dataclass(frozen=True, slots=True)
class Scraped:
    """The samples of one scrape (name -> value, label sets summed), or why there are none."""

    samples: Mapping[str, float]
    problem: str | None = None
    # The problem may pass on its own (an unreadable page, a 5xx, no answer in time): worth a
    # retry before the cross-check is given up for the run.
    may_pass: bool = False


def parse_exposition(text: str) -> dict[str, float]:
    """Sample name -> value summed over label sets; NaN samples are left out. Of the DCGM energy
    and power series (a GPU each), how many were summed is kept too (`series_name`), and one that
    is NaN, infinite or negative makes the sum NaN: left out, the sum would lack a GPU unseen.

    Raises ValueError when the text is not the Prometheus exposition format.

    >>> parse_exposition('x_total{a="1"} 2\\nx_total{a="2"} 3\\n# TYPE g gauge\\ng 1.5\\n')
    {'x_total': 5.0, 'g': 1.5}
    >>> page = 'DCGM_FI_DEV_POWER_USAGE{gpu="0"} 80\\nDCGM_FI_DEV_POWER_USAGE{gpu="1"} 90\\n'
    >>> parse_exposition(page)
    {'DCGM_FI_DEV_POWER_USAGE series': 2.0, 'DCGM_FI_DEV_POWER_USAGE': 170.0}
    >>> parse_exposition(page.replace("90", "NaN"))["DCGM_FI_DEV_POWER_USAGE"]
    nan
    """
    totals: dict[str, float] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            value = float(sample.value)
            name = sample.name
            if name in _COUNTED:
                if not (math.isfinite(value) and value >= 0):
                    value = math.nan
                counted = series_name(name)
                totals[counted] = totals.get(counted, 0.0) + 1
            elif math.isnan(value):
                continue
            totals[name] = totals.get(name, 0.0) + value
    return totals


async def _read_body(content: aiohttp.StreamReader) -> bytes:
    """The page to its end, or its first `MAX_METRICS_BYTES` + 1 bytes when it is longer.

    One `read(n)` returns what has arrived so far, up to n bytes: a page longer than a chunk
    would be cut (mid-line, mid-number) and parsed as if whole.
    """
    chunks: list[bytes] = []
    size = 0
    while size <= MAX_METRICS_BYTES:
        chunk = await content.read(MAX_METRICS_BYTES + 1 - size)
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks)


async def scrape(
    session: aiohttp.ClientSession,
    url: str,
    headers: Mapping[str, str],
    timeout_s: float,
    shown_url: str | None = None,
) -> Scraped:
    """GET `url` and parse it; any failure is a `Scraped` with a `problem`, never an exception.

    Problems name the URL as `shown_url` (credentials masked) when given.
    """
    import aiohttp

    shown = url if shown_url is None else shown_url
    try:
        async with session.get(
            url,
            headers=dict(headers),
            timeout=aiohttp.ClientTimeout(total=timeout_s),
            allow_redirects=False,
        ) as response:
            if response.status != 200:
                return Scraped(
                    {}, f"GET {shown} answered HTTP {response.status}", response.status >= 500
                )
            body = await _read_body(response.content)
    except TimeoutError as error:
        return Scraped({}, f"GET {shown} failed: {type(error).__name__}", may_pass=True)
    except (aiohttp.ClientError, OSError) as error:
        return Scraped({}, f"GET {shown} failed: {type(error).__name__}")
    except ValueError as error:  # aiohttp refuses a URL or headers it cannot send
        return Scraped({}, f"GET {shown} cannot be sent: {type(error).__name__}")
    if len(body) > MAX_METRICS_BYTES:
        return Scraped({}, f"GET {shown}: metrics page larger than {MAX_METRICS_BYTES} bytes")
    try:
        return Scraped(parse_exposition(body.decode("utf-8", errors="replace")))
    except ValueError as error:
        said = str(error)
        if len(said) > _MOST_QUOTED:
            said = said[:_MOST_QUOTED] + "…"
        return Scraped({}, f"GET {shown}: not Prometheus metrics ({said})", may_pass=True)
