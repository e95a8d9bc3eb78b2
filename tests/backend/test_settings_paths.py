"""A server URL pasted with an endpoint's path is split from it, for every endpoint there is."""

from __future__ import annotations

import pytest

from assay.backend.settings import split_endpoint_path
from assay.core import Endpoint


@pytest.mark.parametrize("endpoint", list(Endpoint), ids=str)
def test_every_endpoint_path_is_split_from_a_pasted_url(endpoint: Endpoint) -> None:
    base = "http://127.0.0.1:8000"
    assert split_endpoint_path(f"{base}{endpoint.path}/") == (base, endpoint.path)


def test_a_url_without_an_endpoint_path_is_kept_as_given() -> None:
    assert split_endpoint_path("http://127.0.0.1:8000/v1") == ("http://127.0.0.1:8000/v1", None)


def test_the_models_path_is_split_too() -> None:
    assert split_endpoint_path("http://127.0.0.1:8000/v1/models") == (
        "http://127.0.0.1:8000",
        "/v1/models",
    )
