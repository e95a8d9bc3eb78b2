"""The model's context window comes with the `/v1/models` answer readiness reads (issue 21.1)."""

from __future__ import annotations

from assay.backend import BackendSettings
from assay.backend.readiness import wait_for_model
from assay.backend.served_models import ServedModel, served_models
from assay.mock import MockConfig
from tests.conftest import StartMock


async def test_a_listed_max_model_len_is_the_models_context_window(start_mock: StartMock) -> None:
    server = await start_mock(MockConfig(max_model_len=4096))
    served = await wait_for_model(BackendSettings(base_url=server.url))
    assert served == ServedModel("assay-mock", 4096)
    assert server.stats()["requests"] == 0  # the listing only, no generation request


async def test_a_given_model_takes_its_window_from_the_listing(start_mock: StartMock) -> None:
    server = await start_mock(MockConfig(max_model_len=2048))
    served = await wait_for_model(BackendSettings(base_url=server.url), "assay-mock")
    assert served == ServedModel("assay-mock", 2048)


async def test_a_model_the_server_does_not_list_has_no_known_window(
    start_mock: StartMock,
) -> None:
    server = await start_mock(MockConfig(max_model_len=2048))
    served = await wait_for_model(BackendSettings(base_url=server.url), "another-model")
    assert served == ServedModel("another-model", None)


async def test_a_listing_without_max_model_len_has_no_known_window(mock_url: str) -> None:
    assert await wait_for_model(BackendSettings(base_url=mock_url)) == ServedModel("assay-mock")


def test_a_window_that_is_not_a_positive_integer_is_not_named() -> None:
    listed = served_models(
        [
            {"id": "a", "max_model_len": 0},
            {"id": "b", "max_model_len": -5},
            {"id": "c", "max_model_len": 4096.0},
            {"id": "d", "max_model_len": True},
            {"id": "e", "max_model_len": 131072},
            {"no": "id"},
        ]
    )
    assert [(model.id, model.context_window) for model in listed] == [
        ("a", None),
        ("b", None),
        ("c", None),
        ("d", None),
        ("e", 131072),
    ]


def test_a_named_window_that_is_not_one_says_why() -> None:
    listed = served_models(
        [
            {"id": "zero", "max_model_len": 0},
            {"id": "negative", "max_model_len": -1},
            {"id": "text", "max_model_len": "8k"},
            {"id": "huge", "max_model_len": 10**30},
            {"id": "largest", "max_model_len": 2**32},
            {"id": "unnamed"},
        ]
    )
    problems = {model.id: model.window_problem for model in listed}
    assert problems == {
        "zero": "/v1/models names max_model_len 0, not a window of at least one token",
        "negative": "/v1/models names max_model_len -1, not a window of at least one token",
        "text": "/v1/models names max_model_len '8k', not a whole number of tokens",
        "huge": "/v1/models names max_model_len 1e+30, above any model's (2^32 at most)",
        "largest": None,
        "unnamed": None,
    }
    assert [model.context_window for model in listed] == [None, None, None, None, 2**32, None]
