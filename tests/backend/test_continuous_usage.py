"""`--continuous-usage-stats` against the project's mock: the request asks for a running usage,
the stream carries one, and the count is reconciled against it (issue 8, item 5)."""

from __future__ import annotations

import pytest
from returns.result import Failure, Success

from assay.backend import BackendSettings, open_backend
from assay.core import (
    DiagnosticCode,
    Endpoint,
    GenerationRequest,
    MonotonicClock,
    TokenSource,
    outcome,
)
from assay.mock.faults import FAULT_HEADER
from assay.validators import default_chain


def _request(endpoint: Endpoint) -> GenerationRequest:
    return GenerationRequest(
        request_id=f"{endpoint}-cu",
        endpoint=endpoint,
        model="assay-mock",
        messages=({"role": "user", "content": "rivers"},) if endpoint is Endpoint.chat else None,
        prompt=None if endpoint is Endpoint.chat else "rivers",
        max_output_tokens=12,
        ignore_eos=True,
    )


@pytest.mark.parametrize("endpoint", [Endpoint.chat, Endpoint.completions])
@pytest.mark.parametrize("continuous", [False, True])
async def test_continuous_usage_setting_asks_for_a_running_usage(
    mock_url: str, endpoint: Endpoint, continuous: bool
) -> None:
    settings = BackendSettings(base_url=mock_url, continuous_usage_stats=continuous)
    async with open_backend(settings, MonotonicClock()) as backend:
        result = await backend.resolve(_request(endpoint))
    match outcome(result.bind(default_chain(endpoint, strict=True))):
        case Success(response):
            expected = TokenSource.continuous_usage if continuous else TokenSource.stream
            assert response.streamed_token_source is expected
            assert response.streamed_tokens == 12
        case Failure(problem):
            raise AssertionError(problem)


async def test_usage_that_disagrees_with_the_running_usage_is_usage_mismatch(
    mock_url: str,
) -> None:
    settings = BackendSettings(
        base_url=mock_url,
        continuous_usage_stats=True,
        headers={FAULT_HEADER: "wrong_usage"},
    )
    async with open_backend(settings, MonotonicClock()) as backend:
        result = await backend.resolve(_request(Endpoint.chat))
    match outcome(result.bind(default_chain(Endpoint.chat, strict=True))):
        case Success(response):
            raise AssertionError(f"expected usage_mismatch, got {response!r}")
        case Failure(problem):
            assert problem.code is DiagnosticCode.usage_mismatch


def test_continuous_usage_flag_and_config_key_reach_the_backend_settings() -> None:
    from assay.backend.settings import settings_for
    from assay.config import build_config

    for file_keys, overrides in (
        ({"continuous_usage_stats": True}, {}),
        ({}, {"continuous_usage_stats": True}),
    ):
        config = build_config(file_keys, overrides)
        settings = settings_for(config.target, "http://127.0.0.1:1", seed=config.seed)
        assert settings.continuous_usage_stats
    default = build_config({}, {})
    assert not settings_for(default.target, "http://127.0.0.1:1", seed=42).continuous_usage_stats
