"""Choosing faults: header parsing, the pure rate choice, and the served counts at /mock/stats."""

from __future__ import annotations

from collections import Counter
from collections.abc import Awaitable, Callable

import aiohttp
import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from assay.errors import ConfigError
from assay.mock import (
    FAULT_HEADER,
    FAULTS,
    REQUEST_ID_HEADER,
    FaultSpec,
    MockConfig,
    MockServer,
    choose_fault,
    parse_fault_header,
)

StartMock = Callable[[MockConfig], Awaitable[MockServer]]

RATES = {"empty_stream": 0.05, "http_503": 0.1, "drop": 0.02}


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        ("inband_error; after=3", FaultSpec("inband_error", after=3)),
        ("  INBAND-ERROR ;after = 3 ;", FaultSpec("inband_error", after=3)),
        ("stall; after=1, seconds=0.25", FaultSpec("stall", after=1, seconds=0.25)),
        ("drop", FaultSpec("drop", after=2)),
    ],
)
def test_fault_header_is_parsed_forgivingly(header: str, expected: FaultSpec) -> None:
    assert parse_fault_header(header) == expected


@pytest.mark.parametrize(
    ("header", "complaint"),
    [
        ("meteor", "unknown fault 'meteor'"),
        ("drop; after=-1", "expected a number >= 0"),
        ("drop; after=soon", "expected a number >= 0"),
        ("drop; after", "expected a number >= 0"),
        ("drop; when=3", "unknown parameter 'when'"),
        ("stall; seconds=nan", "expected a number >= 0"),
    ],
)
def test_bad_fault_header_is_misuse_with_a_clear_message(header: str, complaint: str) -> None:
    with pytest.raises(ConfigError, match=complaint):
        parse_fault_header(header)


def test_every_fault_maps_to_a_code_and_a_description() -> None:
    for name, info in FAULTS.items():
        assert name == name.lower()
        assert info.description
        assert info.code.value


@given(seed=st.integers(0, 2**31), key=st.text(max_size=40))
def test_fault_choice_is_a_pure_function_of_seed_rates_and_key(seed: int, key: str) -> None:
    shuffled = dict(reversed(list(RATES.items())))
    assert choose_fault(seed, RATES, key) == choose_fault(seed, shuffled, key)


def test_fault_choice_follows_the_rates() -> None:
    counts = Counter(choose_fault(11, RATES, f"req-{i}") for i in range(20_000))
    for name, rate in RATES.items():
        assert counts[name] / 20_000 == pytest.approx(rate, abs=0.01)
    assert counts[None] / 20_000 == pytest.approx(1 - sum(RATES.values()), abs=0.01)


def test_different_seeds_choose_different_requests() -> None:
    keys = [f"req-{i}" for i in range(2_000)]
    first = [k for k in keys if choose_fault(1, {"drop": 0.1}, k)]
    second = [k for k in keys if choose_fault(2, {"drop": 0.1}, k)]
    assert first != second


def test_rates_must_be_known_and_sum_to_at_most_one() -> None:
    with pytest.raises(ValidationError, match="unknown fault"):
        MockConfig(fault_rates={"meteor": 0.1})
    with pytest.raises(ValidationError, match="sum to more than 1"):
        MockConfig(fault_rates={"drop": 0.6, "stall": 0.6})


async def test_served_faults_match_the_expected_choice_and_are_counted(
    start_mock: StartMock,
) -> None:
    rates = {"http_500": 0.2, "http_429": 0.1}
    server = await start_mock(MockConfig(fault_rates=rates, seed=5))
    keys = [f"run-1/{i}" for i in range(60)]
    expected = Counter(choose_fault(5, rates, key) for key in keys)
    statuses: Counter[int] = Counter()
    async with aiohttp.ClientSession() as session:
        for key in keys:
            async with session.post(
                server.url + "/v1/completions",
                json={"prompt": "hello", "max_tokens": 2},
                headers={REQUEST_ID_HEADER: key},
            ) as response:
                await response.read()
                statuses[response.status] += 1
        async with session.get(server.url + "/mock/stats") as response:
            stats = await response.json()
    assert statuses == {500: expected["http_500"], 429: expected["http_429"], 200: expected[None]}
    assert stats == {
        "requests": 60,
        "faults": {k: v for k, v in expected.items() if k is not None},
        "faults_not_applicable": {},
    }


async def test_rate_chosen_fault_that_does_not_apply_is_served_clean(
    start_mock: StartMock,
) -> None:
    server = await start_mock(MockConfig(fault_rates={"empty_embedding": 1.0}))
    async with (
        aiohttp.ClientSession() as session,
        session.post(server.url + "/v1/completions", json={"prompt": "hi"}) as response,
    ):
        answer = await response.json()
    assert answer["choices"][0]["text"]
    assert server.stats()["faults_not_applicable"] == {"empty_embedding": 1}
    assert server.stats()["faults"] == {}


async def test_header_fault_overrides_rates(start_mock: StartMock) -> None:
    server = await start_mock(MockConfig(fault_rates={"http_500": 1.0}))
    async with (
        aiohttp.ClientSession() as session,
        session.post(
            server.url + "/v1/completions",
            json={"prompt": "hi"},
            headers={FAULT_HEADER: "html_200"},
        ) as response,
    ):
        assert response.content_type == "text/html"
    assert server.stats()["faults"] == {"html_200": 1}
