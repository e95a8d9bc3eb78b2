"""How to reach one server: its URL, credentials, TLS, deadlines, limits and pool size."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final
from urllib.parse import urlsplit

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    ValidationError,
    field_serializer,
    field_validator,
)

from assay.backend.redaction import Redactor, header_secrets, url_secrets
from assay.backend.trace_context import TraceContext
from assay.errors import ConfigError
from assay.h1.credentials import basic_authorization
from assay.spec.endpoint import Endpoint

# What a sendable header is and how secrets are masked belong to the run's vocabulary: the run
# config checks and masks with them as well.
from assay.spec.target import (
    SendableHeaders,
    Target,
    Timeouts,
    check_header,
    is_secret_header,
    mask_headers,
    mask_url,
)

# Well above any real answer (a 128k-token answer is about 1 MB of SSE), low enough that an
# endless or runaway response fails long before it can exhaust memory.
DEFAULT_MAX_RESPONSE_BYTES: Final = 64 * 1024 * 1024
DEFAULT_REQUEST_ID_HEADER: Final = "X-Request-Id"
DEFAULT_API_KEY_ENV: Final = "OPENAI_API_KEY"

# Endpoint paths a user may paste with the server URL; the backend adds them itself.
_ENDPOINT_PATHS: Final = (*(endpoint.path for endpoint in Endpoint), "/v1/models")


def split_endpoint_path(url: str) -> tuple[str, str | None]:
    """`url` without a trailing endpoint path (`/v1/chat/completions`, ...), and that path.

    >>> split_endpoint_path("http://127.0.0.1:8000/v1/chat/completions")
    ('http://127.0.0.1:8000', '/v1/chat/completions')
    >>> split_endpoint_path("http://127.0.0.1:8000/v1")
    ('http://127.0.0.1:8000/v1', None)
    """
    stripped = url.strip().rstrip("/")
    for path in _ENDPOINT_PATHS:
        if stripped.endswith(path):
            return stripped.removesuffix(path), path
    return url, None


class BackendSettings(BaseModel):
    """Where the server is and how to talk to it; never reveals a credential.

    `base_url` is the server root (a trailing `/v1`, or a pasted endpoint path such as
    `/v1/chat/completions`, is dropped, since endpoint paths carry it). `max_connections`
    should be at least the run's concurrency: see `sized_for`. Header values whose names look
    like credentials (Authorization, *-Key, *-Token, Cookie, ...) or that `secret_headers` names
    are masked in repr and dumps and redacted from every stored or printed text, as are the API
    key and a password in the URL. `continuous_usage_stats` asks streamed chat/completions for a
    running usage on every chunk (vLLM's `stream_options.continuous_usage_stats`), which lets
    usage be reconciled exactly.

    >>> s = BackendSettings(base_url="http://127.0.0.1:8000/v1/", api_key=SecretStr("sk-secret"))
    >>> s.base_url
    'http://127.0.0.1:8000'
    >>> "sk-secret" in repr(s) or "sk-secret" in str(s.model_dump())
    False
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    base_url: str
    api_key: SecretStr | None = None
    headers: SendableHeaders = {}
    secret_headers: tuple[str, ...] = ()
    # The header that carries each request's id, as a UUID; None sends no id header.
    request_id_header: str | None = DEFAULT_REQUEST_ID_HEADER
    verify_tls: bool = True
    ca_bundle: Path | None = None
    timeouts: Timeouts = Timeouts()
    max_connections: int = Field(default=512, gt=0)
    continuous_usage_stats: bool = False
    max_response_bytes: int = Field(default=DEFAULT_MAX_RESPONSE_BYTES, gt=0)
    # A W3C `traceparent` on every request (`--trace-context`); None sends none.
    trace_context: TraceContext | None = None

    @field_validator("base_url")
    @classmethod
    def _http_url(cls, value: str) -> str:
        try:
            parts = urlsplit(split_endpoint_path(value)[0].strip())
            hostname = parts.hostname
            _ = parts.port  # raises for a port that is not a number in range
        except ValueError:
            raise ValueError(f"base_url is not a valid URL: {mask_url(value)!r}") from None
        if parts.scheme not in ("http", "https") or not hostname:
            raise ValueError(
                f"base_url must be an http:// or https:// URL with a host: {mask_url(value)!r}"
            )
        if parts.query or parts.fragment:
            raise ValueError(f"base_url must not carry a query or fragment: {mask_url(value)!r}")
        path = parts.path.rstrip("/")
        path = path.removesuffix("/v1")
        return f"{parts.scheme}://{parts.netloc}{path}"

    @field_validator("request_id_header")
    @classmethod
    def _request_id_header_name(cls, value: str | None) -> str | None:
        if value is not None:
            problem = check_header(value, "")
            if problem is not None:
                raise ValueError(problem)
        return value

    @field_serializer("headers")
    def _mask_secret_headers(self, value: dict[str, str]) -> dict[str, str]:
        return mask_headers(value, self.secret_headers)

    @field_serializer("base_url")
    def _mask_url_password(self, value: str) -> str:
        return mask_url(value)

    def __repr_args__(self) -> Iterator[tuple[str | None, Any]]:
        for name, value in super().__repr_args__():
            if name == "headers" and isinstance(value, dict):
                yield name, mask_headers(value, self.secret_headers)
            elif name == "base_url" and isinstance(value, str):
                yield name, mask_url(value)
            else:
                yield name, value

    @property
    def display_url(self) -> str:
        """`base_url` as it may be printed: a password in it masked."""
        return mask_url(self.base_url)

    @property
    def request_root(self) -> str:
        """`base_url` without user info: credentials in the URL travel as a Basic header.

        >>> BackendSettings(base_url="http://bob:pw-123@127.0.0.1:8000").request_root
        'http://127.0.0.1:8000'
        """
        parts = urlsplit(self.base_url)
        if "@" not in parts.netloc:
            return self.base_url
        return parts._replace(netloc=parts.netloc.rpartition("@")[2]).geturl()

    def authorization(self) -> str | None:
        """The Authorization value assay adds: the API key as a bearer token, else the URL's
        user and password as Basic credentials, else none."""
        if self.api_key is not None:
            return f"Bearer {self.api_key.get_secret_value()}"
        return basic_authorization(self.base_url)

    def redactor(self) -> Redactor:
        """A redactor for every credential these settings hold."""
        secrets: list[str] = []
        if self.api_key is not None:
            secrets.append(self.api_key.get_secret_value())
        for name, value in self.headers.items():
            if is_secret_header(name, self.secret_headers):
                secrets.extend(header_secrets(name, value))
        secrets.extend(url_secrets(self.base_url))
        authorization = self.authorization()
        if authorization is not None:
            secrets.extend(header_secrets("Authorization", authorization))
        return Redactor(secrets)

    def sized_for(self, concurrency: int) -> BackendSettings:
        """A copy whose pool holds at least `concurrency` connections (one per in-flight request).

        >>> small = BackendSettings(base_url="http://127.0.0.1:1", max_connections=8)
        >>> small.sized_for(64).max_connections
        64
        """
        if concurrency <= self.max_connections:
            return self
        return self.model_copy(update={"max_connections": concurrency})


def settings_for(target: Target, base_url: str, *, seed: int) -> BackendSettings:
    """How to reach `base_url` as `target` says; the API key is read from the environment
    variable it names (`seed` goes into the ids of `--trace-context`).

    A variable named with `--api-key-env` must be set and not empty (a run that silently goes
    without its key would only show 401s); the default `OPENAI_API_KEY` is used when set.
    """
    name = target.api_key_env or DEFAULT_API_KEY_ENV
    key = os.environ.get(name)
    if target.api_key_env is not None and not key:
        state = "is empty" if key is not None else "is not set"
        raise ConfigError(f"--api-key-env {name}: the environment variable {state}")
    id_header = target.request_id_header
    try:
        return BackendSettings(
            base_url=base_url,
            api_key=SecretStr(key) if key else None,
            headers=target.headers,
            secret_headers=target.secret_headers,
            request_id_header=None if id_header.lower() == "none" else id_header,
            verify_tls=not target.insecure,
            ca_bundle=target.ca_bundle,
            continuous_usage_stats=target.continuous_usage_stats,
            timeouts=target.timeouts,
            max_response_bytes=target.max_response_bytes,
            trace_context=(
                TraceContext.for_run(seed, target.trace_sample, from_seed=target.trace_from_seed)
                if target.trace_context
                else None
            ),
        )
    except ValidationError as error:
        # One line per problem and never the input values, which may hold credentials.
        problems = (
            f"{str(problem['loc'][0]).replace('_', '-')}: " * bool(problem["loc"])
            + str(problem["msg"]).removeprefix("Value error, ")
            for problem in error.errors()
        )
        raise ConfigError("; ".join(problems)) from None
