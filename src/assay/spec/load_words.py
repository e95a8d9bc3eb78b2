"""How reports word the load a step offered (`LoadWords`), and the number formats the words
use. Each step load says its own words (`words()` in `assay.spec.load`), so a new profile's
words are written beside its parameters."""

from __future__ import annotations

from typing import NamedTuple


class LoadWords(NamedTuple):
    """The load a step offered: in a sentence ("concurrent, 4 streams"), in a steps table's
    cell ("4 streams") and after the step's name on a chart axis (" x4")."""

    sentence: str
    cell: str
    label: str


def short_rate(rate: float) -> str:
    """A rate to three significant digits, never in exponent form: 16.6234 -> "16.6".

    >>> short_rate(16.6234), short_rate(20.0), short_rate(1234.5), short_rate(0.01234)
    ('16.6', '20', '1230', '0.0123')
    """
    rounded = float(f"{rate:.3g}")
    return f"{rounded:.0f}" if rounded >= 100 else f"{rounded:g}"


def rate_text(rate: float) -> str:
    """A rate in req/s as a title shows it: four significant figures (a sweep's measured rates
    have many more), every whole digit kept.

    >>> rate_text(1.3264213), rate_text(200.0), rate_text(0.5), rate_text(12345.6)
    ('1.326', '200', '0.5', '12346')
    """
    return f"{rate:.4g}" if rate < 1000 else f"{rate:.0f}"


def seconds_text(value: float) -> str:
    """A duration in seconds as a sentence shows it: three significant figures, every whole
    second kept (a duration derived from a time limit has many more).

    >>> seconds_text(5.54518), seconds_text(60.0), seconds_text(0.25), seconds_text(1234.56)
    ('5.55', '60', '0.25', '1235')
    """
    return f"{value:.3g}" if value < 100 else f"{value:.0f}"


def rate_words(kind: str, rate: float) -> LoadWords:
    """An open loop at `rate` requests/s, as a step of profile `kind` (a constant, or a sweep's
    step named only by its rate) is worded.

    >>> rate_words("constant", 16.6234)
    LoadWords(sentence='constant at 16.62 req/s', cell='16.6/s', label=' 16.6/s')
    """
    return LoadWords(
        f"{kind} at {rate_text(rate)} req/s", f"{rate:.3g}/s", f" {short_rate(rate)}/s"
    )


__all__ = ["LoadWords", "rate_text", "rate_words", "seconds_text", "short_rate"]
