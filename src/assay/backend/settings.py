"""How to reach one server: its URL, credentials, TLS, deadlines and connection pool size."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    field_serializer,
    field_validator,
)

# Header names whose values are credentials: masked in repr and in dumps.
_SECRET_HEADER_WORDS = ("auth", "key", "token", "secret", "cookie", "session")
_MASK = "**********"


class Timeouts(BaseModel):
    """The four deadlines of one request, in seconds; each one has its own diagnostic code.

    `connect` bounds opening a new connection, `first_token` the time from send to the first
    token-bearing chunk (the whole body when not streamed), `idle` a silence once the body
    started, `total` the whole request.

    >>> Timeouts(idle_s=0.5).first_token_s
    60.0
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    connect_s: float = Field(default=10.0, gt=0)
    first_token_s: float = Field(default=60.0, gt=0)
    idle_s: float = Field(default=30.0, gt=0)
    total_s: float = Field(default=600.0, gt=0)


class BackendSettings(BaseModel):
    """Where the server is and how to talk to it; never reveals the API key.

    `base_url` is the server root (a trailing `/v1` is dropped, since endpoint paths carry it).
    `max_connections` should be at least the run's concurrency: see `sized_for`.
    `continuous_usage_stats` asks streamed chat/completions for a running usage on every chunk
    (vLLM's `stream_options.continuous_usage_stats`), which lets usage be reconciled exactly.

    >>> s = BackendSettings(base_url="http://127.0.0.1:8000/v1/", api_key=SecretStr("sk-secret"))
    >>> s.base_url
    'http://127.0.0.1:8000'
    >>> "sk-secret" in repr(s) or "sk-secret" in str(s.model_dump())
    False
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    base_url: str
    api_key: SecretStr | None = None
    headers: dict[str, str] = {}
    verify_tls: bool = True
    timeouts: Timeouts = Timeouts()
    max_connections: int = Field(default=512, gt=0)
    continuous_usage_stats: bool = False

    @field_validator("base_url")
    @classmethod
    def _http_url(cls, value: str) -> str:
        parts = urlsplit(value.strip())
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"base_url must be an http:// or https:// URL with a host: {value!r}")
        if parts.query or parts.fragment:
            raise ValueError(f"base_url must not carry a query or fragment: {value!r}")
        path = parts.path.rstrip("/")
        path = path.removesuffix("/v1")
        return f"{parts.scheme}://{parts.netloc}{path}"

    @field_validator("headers")
    @classmethod
    def _no_authorization_header(cls, value: dict[str, str]) -> dict[str, str]:
        for name in value:
            if name.lower() == "authorization":
                raise ValueError("set the bearer token with api_key, not an Authorization header")
        return value

    @field_serializer("headers")
    def _mask_secret_headers(self, value: dict[str, str]) -> dict[str, str]:
        return {name: _masked(name, text) for name, text in value.items()}

    def __repr_args__(self) -> Iterator[tuple[str | None, Any]]:
        for name, value in super().__repr_args__():
            if name == "headers" and isinstance(value, dict):
                yield name, {key: _masked(key, text) for key, text in value.items()}
            else:
                yield name, value

    def sized_for(self, concurrency: int) -> BackendSettings:
        """A copy whose pool holds at least `concurrency` connections (one per in-flight request).

        >>> small = BackendSettings(base_url="http://127.0.0.1:1", max_connections=8)
        >>> small.sized_for(64).max_connections
        64
        """
        if concurrency <= self.max_connections:
            return self
        return self.model_copy(update={"max_connections": concurrency})


def _masked(name: str, value: str) -> str:
    lowered = name.lower()
    return _MASK if any(word in lowered for word in _SECRET_HEADER_WORDS) else value
