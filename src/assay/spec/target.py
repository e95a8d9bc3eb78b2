"""The target of a run: what makes a base URL and a header sendable, and how either is shown.

Pure checks and masks, shared by the run config (which refuses a bad value before anything
starts), the backend (which sends them) and the report (which echoes them masked): a header's
value or a URL's password never reaches a stored or printed text.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from pathlib import Path
from typing import Annotated, Any, Final, TypeAlias
from urllib.parse import urlsplit

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    PlainSerializer,
    field_serializer,
    field_validator,
    model_validator,
)

from assay.spec.endpoint import Endpoint
from assay.spec.limits import MAX_CONTEXT_WINDOW, MAX_DURATION_S
from assay.spec.model_mix import MixOrder, ModelMix, canonical_models, is_mix

MASK: Final = "**********"
"""What every secret is replaced by."""

# Header names whose values are credentials (matched as parts of the lower-cased name).
_SECRET_NAME_WORDS: Final = ("auth", "key", "token", "secret", "cookie", "session", "password")

_TOKEN_CHARS: Final = frozenset(
    "!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
)


def check_target(target: str) -> str:
    """`target` if it is an http(s) base URL with a host and a valid port, else a ValueError
    saying what is wrong (the most common first mistake, a missing scheme, gets a suggestion).

    >>> check_target("http://127.0.0.1:8000")
    'http://127.0.0.1:8000'
    >>> check_target("127.0.0.1:8000")
    Traceback (most recent call last):
    ValueError: '127.0.0.1:8000' has no scheme; did you mean http://127.0.0.1:8000 ?
    """
    if target.startswith(("/", ".")):
        raise ValueError(f"{target!r}: a socket path is not supported; give an http(s):// URL")
    if "://" not in target:
        raise ValueError(f"{target!r} has no scheme; did you mean http://{target} ?")
    parts = urlsplit(target)
    if parts.scheme not in ("http", "https"):
        raise ValueError(
            f"{target!r}: the scheme must be http:// or https://, not {parts.scheme}://"
        )
    if not parts.hostname:
        raise ValueError(f"{target!r} has no host")
    try:
        port = parts.port
    except ValueError:
        raise ValueError(f"{target!r}: the port must be a number from 1 to 65535") from None
    if port == 0:
        raise ValueError(f"{target!r}: the port must be a number from 1 to 65535")
    if parts.query or parts.fragment or target.endswith(("?", "#")):
        raise ValueError(f"{target!r}: a base URL has no query string or fragment")
    return target


def check_header(name: str, value: str) -> str | None:
    """Why `name: value` cannot be sent as an HTTP header, or None when it can.

    The value itself is never quoted: it may be a credential.

    >>> check_header("X-Team", "a\\r\\nX-Evil: 1")
    'header X-Team: the value holds a line break (CR or LF)'
    """
    if not name or not set(name) <= _TOKEN_CHARS:
        return f"header name {name!r} is not a valid HTTP header name"
    if "\r" in value or "\n" in value or "\0" in value:
        return f"header {name}: the value holds a line break (CR or LF)"
    return None


def sendable_headers(headers: dict[str, str]) -> dict[str, str]:
    """`headers` when every one can be sent, else a ValueError naming the first that cannot.

    >>> sendable_headers({"X-Team": "infra"})
    {'X-Team': 'infra'}
    >>> sendable_headers({"X Team": "infra"})
    Traceback (most recent call last):
    ValueError: header name 'X Team' is not a valid HTTP header name
    """
    for name, value in headers.items():
        problem = check_header(name, value)
        if problem is not None:
            raise ValueError(problem)
    return headers


SendableHeaders: TypeAlias = Annotated[dict[str, str], AfterValidator(sendable_headers)]
"""Extra request headers, each checked by `check_header` (the run config's and the backend's)."""


def is_secret_header(name: str, marked: Iterable[str] = ()) -> bool:
    """Whether a header's value is a credential: auth-like by name, or marked by the user.

    >>> is_secret_header("X-Api-Key"), is_secret_header("Cookie"), is_secret_header("X-Team")
    (True, True, False)
    >>> is_secret_header("X-Tenant", marked=["x-tenant"])
    True
    """
    lowered = name.lower()
    if any(lowered == other.lower() for other in marked):
        return True
    return any(word in lowered for word in _SECRET_NAME_WORDS)


def mask_headers(headers: dict[str, str], marked: Iterable[str] = ()) -> dict[str, str]:
    """`headers` with every secret value replaced by the mask, for reports and repr.

    >>> mask_headers({"X-Api-Key": "k-123456", "X-Team": "infra"})
    {'X-Api-Key': '**********', 'X-Team': 'infra'}
    """
    marked = tuple(marked)
    return {
        name: MASK if is_secret_header(name, marked) else value for name, value in headers.items()
    }


def mask_url(url: str) -> str:
    """`url` with the password of its user info masked; other URLs unchanged.

    >>> mask_url("http://bob:hunter22@127.0.0.1:8000/v1")
    'http://bob:**********@127.0.0.1:8000/v1'
    >>> mask_url("http://127.0.0.1:8000")
    'http://127.0.0.1:8000'
    """
    try:
        parts = urlsplit(url)
        password = parts.password
    except ValueError:
        return url
    if password is None or "@" not in parts.netloc:
        return url
    user_info, _, host = parts.netloc.rpartition("@")
    user = user_info.partition(":")[0]
    return parts._replace(netloc=f"{user}:{MASK}@{host}").geturl()


MaskedUrl: TypeAlias = Annotated[str, PlainSerializer(mask_url)]
"""A URL dumped with its password masked (`mask_url`)."""


def on_this_machine(url: str) -> bool:
    """Whether `url` names a server on this machine's loopback (`localhost`, 127.0.0.0/8, ::1).

    >>> on_this_machine("http://127.0.0.1:8000"), on_this_machine("http://[::1]:8000")
    (True, True)
    >>> on_this_machine("http://localhost"), on_this_machine("https://gpu-box:8000")
    (True, False)
    """
    try:
        host = urlsplit(url).hostname or ""
    except ValueError:
        return False
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _deadline(default: float) -> Any:
    """A deadline's field: finite (JSON's `Infinity` or `inf` on the command line would
    overflow the deadlines), above 0 and at most MAX_DURATION_S."""
    return Field(default=default, gt=0, allow_inf_nan=False, le=MAX_DURATION_S)


class Timeouts(BaseModel):
    """The four deadlines of one request, in seconds; each one has its own diagnostic code.

    `connect` bounds opening a new connection, `first_token` the time from send to the first
    token-bearing chunk (the whole body when not streamed), `idle` a silence once the body
    started, `total` the whole request.

    >>> Timeouts(idle_s=0.5).first_token_s
    60.0
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    connect_s: float = _deadline(10.0)
    first_token_s: float = _deadline(60.0)
    idle_s: float = _deadline(30.0)
    total_s: float = _deadline(600.0)


class Target(BaseModel):
    """The server and how to reach it; `url` None runs against an embedded mock.

    A dump masks the header values that are credentials and the password of the URL.
    """

    # A number where text is expected is its text (`model = 7` in a TOML file is "7").
    model_config = ConfigDict(frozen=True, extra="forbid", coerce_numbers_to_str=True)

    url: Annotated[MaskedUrl, AfterValidator(check_target)] | None = None
    endpoint: Endpoint = Endpoint.chat
    # One model, or a traffic mix (`a=0.7,b=0.3`, `a,b`; a config file may give a list or a
    # table of weights): see `assay.spec.model_mix`. A mix is kept as its canonical text.
    model: str | None = None
    # How a mix picks each request's model: drawn from the weights, or a cycling pattern.
    model_mix: MixOrder = "random"
    # None reads OPENAI_API_KEY when set; a variable named here must be set (and not empty).
    api_key_env: str | None = None
    headers: SendableHeaders = {}
    # Header names whose values are secrets besides the auth-like ones (masked and redacted).
    secret_headers: tuple[str, ...] = ()
    # The header carrying each request's UUID; "none" sends no id.
    request_id_header: str = "X-Request-Id"
    # A W3C traceparent on every request, its ids derived from a random key of the run, the
    # run's seed and the request id, the sampled flag set on a `trace_sample` fraction of them.
    trace_context: bool = False
    trace_sample: float = Field(default=1.0, ge=0, le=1, allow_inf_nan=False)
    # Trace ids from the seed alone (a rerun sends the same ones), not unique to the run.
    trace_from_seed: bool = False
    insecure: bool = False
    ca_bundle: Path | None = None
    # Retry a target that is still starting (refused, a status of `RETRY_STATUSES` in
    # `assay.backend.readiness`, no model yet) this long.
    wait_ready: float = Field(default=0.0, ge=0, allow_inf_nan=False)
    # One request before the load checks that the endpoint answers (a real target only).
    probe: bool = True
    # The model's context window in tokens, over what the server names (`max_model_len`);
    # 0 checks no request against a window.
    context_window: int | None = Field(default=None, ge=0, le=MAX_CONTEXT_WINDOW)
    timeouts: Timeouts = Timeouts()
    max_response_bytes: int = Field(default=64 * 1024 * 1024, gt=0)
    # A running usage on every streamed chunk (vLLM's `stream_options.continuous_usage_stats`).
    continuous_usage_stats: bool = False

    @field_validator("model", mode="before")
    @classmethod
    def _mix_as_text(cls, value: Any) -> Any:
        # A config file's list (`["a", "b"]`) or table of weights (`{a = 0.7, b = 0.3}`).
        if isinstance(value, list) and all(isinstance(name, str) for name in value):
            return ",".join(value) if value else ""
        if isinstance(value, dict):
            return ",".join(f"{name}={weight}" for name, weight in value.items()) or ""
        return value

    @field_validator("model")
    @classmethod
    def _model_or_mix(cls, value: str | None) -> str | None:
        if value is None:
            return None
        if not value.strip():
            raise ValueError("the model name is empty")
        return canonical_models(value) if is_mix(value) else value

    @field_validator("request_id_header")
    @classmethod
    def _request_id_header_name(cls, value: str) -> str:
        if value.lower() != "none":
            problem = check_header(value, "")
            if problem is not None:
                raise ValueError(f"{problem} (or 'none' to send no request id)")
        return value

    @model_validator(mode="after")
    def _sample_needs_trace_context(self) -> Target:
        if "trace_sample" in self.model_fields_set and not self.trace_context:
            raise ValueError(
                "--trace-sample sets the sampled flag of the traceparent that --trace-context "
                "sends; add --trace-context"
            )
        mix = self.mix()  # a round-robin pattern too long to cycle is refused here
        if "model_mix" in self.model_fields_set and mix is None:
            raise ValueError(
                "--model-mix picks among the models of a mix; name several with --model a,b"
            )
        if self.trace_from_seed and not self.trace_context:
            raise ValueError(
                "--trace-from-seed sets how --trace-context derives its ids; add --trace-context"
            )
        return self

    @field_serializer("headers")
    def _mask_secret_headers(self, value: dict[str, str]) -> dict[str, str]:
        return mask_headers(value, self.secret_headers)

    def mix(self) -> ModelMix | None:
        """The traffic mix `model` names, or None for one model (or none given).

        >>> Target(model="a=0.7,b=0.3").mix().shares()
        {'a': 0.7, 'b': 0.3}
        >>> Target(model="m").mix() is None
        True
        """
        model = self.model
        if model is None or not is_mix(model):
            return None
        return ModelMix.of(model, self.model_mix)

    def models(self) -> tuple[str, ...]:
        """The models the run names: the mix's, its one model, or none (the server's first)."""
        mix = self.mix()
        if mix is not None:
            return mix.names
        return () if self.model is None else (self.model,)


__all__ = [
    "Target",
    "Timeouts",
    "MASK",
    "MaskedUrl",
    "SendableHeaders",
    "check_header",
    "check_target",
    "is_secret_header",
    "mask_headers",
    "mask_url",
    "on_this_machine",
    "sendable_headers",
]
