"""One scrape of a Prometheus text endpoint: a plain page read by `plain_samples`, any other by
`prometheus_client`'s own parser."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from assay.server_metrics.plain_page import plain_samples

if TYPE_CHECKING:
    import ssl

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
    plain = plain_samples(text)
    for name, value in _samples(text) if plain is None else plain:
        if name in _COUNTED:
            if not (math.isfinite(value) and value >= 0):
                value = math.nan
            counted = series_name(name)
            totals[counted] = totals.get(counted, 0.0) + 1
        elif math.isnan(value):
            continue
        totals[name] = totals.get(name, 0.0) + value
    return totals


def _samples(text: str) -> list[tuple[str, float]]:
    """(sample name, value) of every family, read by `prometheus_client`'s parser: for the
    pages `plain_samples` does not read (raises ValueError when not the text format)."""
    # Imported only then: the package brings http.server and urllib with it (~40 ms).
    from prometheus_client.parser import text_string_to_metric_families

    return [
        (sample.name, float(sample.value))
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    ]


async def scrape(
    url: str,
    headers: Mapping[str, str],
    timeout_s: float,
    shown_url: str | None = None,
    tls: ssl.SSLContext | None = None,
    clean: Callable[[str], str] = str,
) -> Scraped:
    """GET `url` and parse it; any failure is a `Scraped` with a `problem`, never an exception.

    `tls` is the context of an https:// URL. Problems name the URL as `shown_url` (credentials
    masked) when given; `clean` masks what the request sent that is secret in a page's quote
    (a page may echo it), before the quote is cut.
    """
    # Imported where a scrape runs: reading a stored report (`ServerMetricsReport`) must not
    # import the HTTP client.
    from assay.h1.connection import WireFault
    from assay.h1.fetch import fetch
    from assay.h1.pool import ConnectFailure

    shown = url if shown_url is None else shown_url
    try:
        answer = await fetch(
            url,
            headers={
                "Accept": "*/*",
                "Accept-Encoding": "identity",
                "User-Agent": "assay",
                **headers,
            },
            tls=tls,
            timeout_s=timeout_s,
            limit=MAX_METRICS_BYTES,
        )
    except TimeoutError as error:
        return Scraped({}, f"GET {shown} failed: {type(error).__name__}", may_pass=True)
    except ConnectFailure as failure:
        if failure.timed_out:
            return Scraped({}, f"GET {shown} failed: TimeoutError", may_pass=True)
        return Scraped({}, f"GET {shown} failed: {failure.reason}")
    except (WireFault, OSError) as error:
        return Scraped({}, f"GET {shown} failed: {error}")
    except ValueError as error:  # a URL or headers that cannot be sent
        return Scraped({}, f"GET {shown} cannot be sent: {error}")
    if answer.status != 200:
        return Scraped({}, f"GET {shown} answered HTTP {answer.status}", answer.status >= 500)
    if answer.unreadable is not None:
        return Scraped({}, f"GET {shown} cannot be read: {answer.unreadable}")
    body = answer.body
    if len(body) > MAX_METRICS_BYTES:
        return Scraped({}, f"GET {shown}: metrics page larger than {MAX_METRICS_BYTES} bytes")
    try:
        return Scraped(parse_exposition(body.decode("utf-8", errors="replace")))
    except ValueError as error:
        said = clean(str(error))  # before the cut: a secret cut in half would keep its head
        if len(said) > _MOST_QUOTED:
            said = said[:_MOST_QUOTED] + "…"
        return Scraped({}, f"GET {shown}: not Prometheus metrics ({said})", may_pass=True)
