"""BackendSettings: URL validation, deadlines, and a key that never shows."""

from __future__ import annotations

import pytest
from pydantic import SecretStr, ValidationError

from assay.backend import BackendSettings, Timeouts
from assay.config import build_config
from assay.errors import ConfigError

KEY = "sk-live-0123456789abcdef"


def test_base_url_keeps_scheme_host_and_prefix_and_drops_trailing_v1() -> None:
    assert BackendSettings(base_url="https://api.example.com/v1").base_url == (
        "https://api.example.com"
    )
    assert BackendSettings(base_url="http://10.0.0.5:8000/proxy/v1/").base_url == (
        "http://10.0.0.5:8000/proxy"
    )


@pytest.mark.parametrize(
    "url", ["ftp://example.com", "example.com:8000", "http://", "http://h/?q=1", ""]
)
def test_base_url_that_is_not_http_is_rejected(url: str) -> None:
    with pytest.raises(ValidationError):
        BackendSettings(base_url=url)


def test_timeouts_default_to_the_documented_deadlines() -> None:
    timeouts = BackendSettings(base_url="http://127.0.0.1:8000").timeouts
    assert (timeouts.connect_s, timeouts.first_token_s, timeouts.idle_s, timeouts.total_s) == (
        10.0,
        60.0,
        30.0,
        600.0,
    )


@pytest.mark.parametrize("field", ["connect_s", "first_token_s", "idle_s", "total_s"])
def test_non_positive_timeout_is_rejected(field: str) -> None:
    with pytest.raises(ValidationError):
        Timeouts.model_validate({field: 0})


def test_api_key_never_appears_in_repr_str_or_dumps() -> None:
    settings = BackendSettings(
        base_url="http://127.0.0.1:8000",
        api_key=SecretStr(KEY),
        headers={"X-Api-Key": KEY, "X-Team": "a"},
    )
    shown = [
        repr(settings),
        str(settings),
        str(settings.model_dump()),
        settings.model_dump_json(),
    ]
    for text in shown:
        assert KEY not in text
    assert settings.model_dump()["headers"]["X-Team"] == "a"
    assert settings.api_key is not None
    assert settings.api_key.get_secret_value() == KEY


def test_authorization_header_is_accepted_and_masked() -> None:
    settings = BackendSettings(
        base_url="http://127.0.0.1:8000", headers={"Authorization": f"Bearer {KEY}"}
    )
    assert KEY not in repr(settings)
    assert KEY not in settings.model_dump_json()
    assert settings.redactor().clean(f"echo {KEY}") == "echo **********"


@pytest.mark.parametrize("value", ["a\r\nX-Evil: 1", "a\nb", "a\rb"])
def test_header_value_with_a_line_break_is_refused_without_quoting_it(value: str) -> None:
    with pytest.raises(ValidationError, match="line break") as raised:
        BackendSettings(base_url="http://127.0.0.1:8000", headers={"X-Api-Key": value})
    assert "X-Evil" not in str(raised.value).split("input_value")[0]


def test_sized_for_grows_the_pool_to_the_concurrency() -> None:
    settings = BackendSettings(base_url="http://127.0.0.1:8000", max_connections=16)
    assert settings.sized_for(256).max_connections == 256
    assert settings.sized_for(4) is settings


def test_settings_are_frozen() -> None:
    settings = BackendSettings(base_url="http://127.0.0.1:8000")
    with pytest.raises(ValidationError):
        settings.verify_tls = False  # type: ignore[misc]


@pytest.mark.parametrize("name", ["X Team", "", "X-Équipe", "X-Team:"])
def test_run_config_and_backend_settings_refuse_a_bad_header_name_in_the_same_words(
    name: str,
) -> None:
    # One check (`sendable_headers`) for both: the config's own second check was never reached.
    with pytest.raises(ValidationError) as from_backend:
        BackendSettings(base_url="http://127.0.0.1:8000", headers={name: "x"})
    with pytest.raises(ConfigError) as from_config:
        build_config({}, {"headers": {name: "x"}})
    problem = from_backend.value.errors()[0]["msg"].removeprefix("Value error, ")
    assert problem == f"header name {name!r} is not a valid HTTP header name"
    # The overrides are flags: the error names the flag that gave the value.
    assert str(from_config.value) == f"--header: {problem}"
