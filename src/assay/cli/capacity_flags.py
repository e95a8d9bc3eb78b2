"""The flags of a capacity search: `--slo FIGURE=MS[@pXX]` (a goodput limit, and for
`--profile capacity` a percentile SLO) and `--capacity-precision 5%`."""

from __future__ import annotations

from collections.abc import Mapping

from assay.errors import ConfigError


def parse_slo_limits(values: list[str] | None, flag: str) -> dict[str, float] | None:
    """`["ttft_ms=500@p99", "e2e_ms=2000"]` -> the limits `{"ttft_ms": 500.0, "e2e_ms": 2000.0}`
    (goodput counts every request against them); a percentile is checked here and kept for a
    capacity search by `capacity_overrides`. None when the flag was not given.

    >>> parse_slo_limits(["ttft_ms=500@p99", "e2e_ms=2000"], "--slo")
    {'ttft_ms': 500.0, 'e2e_ms': 2000.0}
    """
    if not values:
        return None
    limits: dict[str, float] = {}
    for value in values:
        text, at, percentile = value.partition("@")
        key, sep, number = text.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"{flag} {value!r}: expected NAME=NUMBER (FIGURE=MS[@pXX])")
        try:
            limits[key.strip()] = float(number)
        except ValueError:
            raise ConfigError(f"{flag} {value!r}: {number!r} is not a number") from None
        if at:
            _check_percentile(value, percentile.strip().removeprefix("p"), flag)
    return limits


def _check_percentile(value: str, percentile: str, flag: str) -> None:
    try:
        number = float(percentile)
    except ValueError:
        raise ConfigError(f"{flag} {value!r}: the percentile is pXX, e.g. p99") from None
    if not 0 < number < 100:
        raise ConfigError(f"{flag} {value!r}: a percentile is within (0, 100), not {number:g}")


def parse_fraction(value: object, flag: str) -> float | None:
    """`5%` or `0.05` -> 0.05; None when the flag was not given.

    >>> parse_fraction("5%", "--capacity-precision"), parse_fraction("0.1", "--capacity-precision")
    (0.05, 0.1)
    """
    if value is None:
        return None
    text = str(value).strip()
    try:
        number = float(text.removesuffix("%"))
    except ValueError:
        raise ConfigError(f"{flag} {text!r}: give a fraction (0.05) or a percentage (5%)") from None
    return number / 100 if text.endswith("%") else number


def capacity_overrides(flags: Mapping[str, object], profile: object) -> dict[str, object]:
    """The capacity search's SLOs from `--slo` when the run's `profile` (a flag's or the config
    file's) is capacity (unless `--capacity-slos` gave them); a percentile on another profile is
    refused.

    >>> capacity_overrides({"slo": ["ttft_ms=500@p99"]}, "capacity")
    {'capacity_slos': ['ttft_ms=500@p99']}
    """
    texts = flags.get("slo")
    if not isinstance(texts, list) or not texts:
        return {}
    if profile != "capacity":
        with_percentile = [text for text in texts if "@" in str(text)]
        if with_percentile:
            raise ConfigError(
                f"--slo {with_percentile[0]}: a percentile applies to --profile capacity "
                "(goodput counts every request against the limit)"
            )
        return {}
    if flags.get("capacity_slos"):
        return {}
    return {"capacity_slos": [str(text) for text in texts]}


__all__ = ["capacity_overrides", "parse_fraction", "parse_slo_limits"]
