"""Parsing of the repeatable flags into the values of their config keys, with one-line errors
that name the flag. What a parser needs is imported when it runs: the table of flags
(`assay.cli.run_flags`) imports this module at every start."""

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
    if not values:
        return None
    pairs: dict[str, float] = {}
    for value in values:
        key, sep, number = value.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"{flag} {value!r}: expected NAME=NUMBER")
        try:
            pairs[key.strip()] = float(number)
        except ValueError:
            raise ConfigError(f"{flag} {value!r}: {number!r} is not a number") from None
    return pairs


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
