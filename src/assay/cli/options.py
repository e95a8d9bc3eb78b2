"""Parsing of the repeatable flags (and `--capacity-precision 5%`) into the values of their
config keys, with one-line errors that name the flag. What a parser needs is imported when it
runs: the table of flags (`assay.cli.run_flags`) imports this module at every start."""

from __future__ import annotations

from typing import Any

from assay.errors import ConfigError


def parse_texts(values: list[str] | None, flag: str) -> tuple[str, ...] | None:
    """`["a", "b"]` -> `("a", "b")`; None when the flag was not given.

    >>> parse_texts(["###"], "--stop")
    ('###',)
    """
    return tuple(values) if values else None


def parse_pairs(values: list[str] | None, flag: str) -> dict[str, float] | None:
    """`["a=1", "b=0.5"]` -> `{"a": 1.0, "b": 0.5}`; None when the flag was not given.

    >>> parse_pairs(["ttft_ms=500", "tpot_ms=50"], "--slo")
    {'ttft_ms': 500.0, 'tpot_ms': 50.0}
    """
    return dict(_pair(value, value, flag, "NAME=NUMBER") for value in values) if values else None


def _pair(value: str, text: str, flag: str, form: str) -> tuple[str, float]:
    """`text` (`value` or its part before `@`) as `NAME=NUMBER`; an error quotes `value`."""
    key, sep, number = text.partition("=")
    if not sep or not key.strip():
        raise ConfigError(f"{flag} {value!r}: expected {form}")
    try:
        return key.strip(), float(number)
    except ValueError:
        raise ConfigError(f"{flag} {value!r}: {number!r} is not a number") from None


def parse_slo_limits(values: list[str] | None, flag: str) -> dict[str, float] | None:
    """`["ttft_ms=500@p99", "e2e_ms=2000"]` -> the limits `{"ttft_ms": 500.0, "e2e_ms": 2000.0}`
    (goodput counts every request against them); a percentile is checked here and kept for a
    capacity search by `assay.cli.run_overrides`. None when the flag was not given.

    >>> parse_slo_limits(["ttft_ms=500@p99", "e2e_ms=2000"], "--slo")
    {'ttft_ms': 500.0, 'e2e_ms': 2000.0}
    """
    if not values:
        return None
    limits: dict[str, float] = {}
    for value in values:
        text, at, percentile = value.partition("@")
        key, limit = _pair(value, text, flag, "NAME=NUMBER (FIGURE=MS[@pXX])")
        limits[key] = limit
        if not at:
            continue
        try:
            number = float(percentile.strip().removeprefix("p"))
        except ValueError:
            raise ConfigError(f"{flag} {value!r}: the percentile is pXX, e.g. p99") from None
        if not 0 < number < 100:
            raise ConfigError(f"{flag} {value!r}: a percentile is within (0, 100), not {number:g}")
    return limits


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


def parse_headers(values: list[str] | None, flag: str) -> dict[str, str] | None:
    """`["X-A: 1"]` -> `{"X-A": "1"}`; None when the flag was not given.

    >>> parse_headers(["X-Team: infra"], "--header")
    {'X-Team': 'infra'}
    """
    from assay.spec.target import check_header

    if not values:
        return None
    headers: dict[str, str] = {}
    for value in values:
        name, sep, text = value.partition(":")
        if not sep or not name.strip():
            # The value is not quoted: it may be a credential.
            raise ConfigError(f"{flag}: expected 'Name: value' (no colon after a name)")
        text = text.strip()
        problem = check_header(name.strip(), text)
        if problem is not None:
            raise ConfigError(f"{flag}: {problem}")
        headers[name.strip()] = text
    return headers


def parse_json_objects(values: list[str] | None, flag: str) -> dict[str, Any] | None:
    """Repeated JSON objects merged left to right (a later key wins); None when not given.

    >>> parse_json_objects(['{"temperature": 0.2, "top_k": 5}', '{"temperature": 0}'], "--x")
    {'temperature': 0, 'top_k': 5}
    """
    import orjson

    if not values:
        return None
    merged: dict[str, Any] = {}
    for value in values:
        try:
            parsed = orjson.loads(value)
        except orjson.JSONDecodeError as error:
            raise ConfigError(f"{flag} {value!r}: not valid JSON ({error})") from None
        if not isinstance(parsed, dict):
            raise ConfigError(f"{flag} {value!r}: expected a JSON object {{...}}")
        merged.update(parsed)
    return merged


def parse_mapping(values: list[str] | None, flag: str) -> dict[str, str] | None:
    """`["prompt=question"]` -> `{"prompt": "question"}`; None when the flag was not given.

    >>> parse_mapping(["prompt=question", "output_tokens=answer_len"], "--data-column")
    {'prompt': 'question', 'output_tokens': 'answer_len'}
    """
    if not values:
        return None
    mapping: dict[str, str] = {}
    for value in values:
        key, sep, name = value.partition("=")
        if not sep or not key.strip() or not name.strip():
            raise ConfigError(f"{flag} {value!r}: expected ROLE=COLUMN")
        mapping[key.strip()] = name.strip()
    return mapping
