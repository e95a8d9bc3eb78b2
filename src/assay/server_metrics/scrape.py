"""One scrape of a Prometheus text endpoint, parsed by `prometheus_client`'s own parser."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from prometheus_client.parser import text_string_to_metric_families

if TYPE_CHECKING:
    # Imported where a scrape runs: reading a stored report (`ServerMetricsReport`) must not
    # import the HTTP client.
    import aiohttp

# A metrics page far larger than any server's is not read to the end: memory stays bounded.
MAX_METRICS_BYTES = 8 << 20


@dataclass(frozen=True, slots=True)
class Scraped:
    """The samples of one scrape (name -> value, label sets summed), or why there are none."""

    samples: Mapping[str, float]
    problem: str | None = None
    # The problem may pass on its own (an unreadable page, a 5xx, no answer in time): worth a
    # retry before the cross-check is given up for the run.
    may_pass: bool = False


def parse_exposition(text: str) -> dict[str, float]:
    """Sample name -> value summed over label sets; NaN samples are left out.

    Raises ValueError when the text is not the Prometheus exposition format.

    >>> parse_exposition('x_total{a="1"} 2\\nx_total{a="2"} 3\\n# TYPE g gauge\\ng 1.5\\n')
    {'x_total': 5.0, 'g': 1.5}
    """
    totals: dict[str, float] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            value = float(sample.value)
            if math.isnan(value):
                continue
            totals[sample.name] = totals.get(sample.name, 0.0) + value
    return totals


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
            body = await response.content.read(MAX_METRICS_BYTES + 1)
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
        return Scraped({}, f"GET {shown}: not Prometheus metrics ({error})", may_pass=True)
