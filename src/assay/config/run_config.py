"""The run configuration: one frozen model whose keys mirror the `assay run` flags.

A config file (TOML or JSON) holds the same keys (dashes or underscores); flags given on the
command line override the file. Validation errors become one `ConfigError` line per problem.
"""

from __future__ import annotations

import json
import tomllib
import unicodedata
from pathlib import Path
from typing import Any, Final, Literal, Self, get_args
from urllib.parse import urlsplit

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    JsonValue,
    ValidationError,
    field_serializer,
    field_validator,
    model_validator,
)

from assay.backend.redaction import mask_headers, mask_url
from assay.backend.settings import SendableHeaders, check_header
from assay.config.limits import usable_cpus
from assay.core import Endpoint
from assay.errors import ConfigError
from assay.spec.load import CONCURRENCY_KINDS, RATE_KINDS, ProfileKind
from assay.spec.source import PromptColumns

SLO_KEYS: Final = ("ttft_ms", "tpot_ms", "itl_ms", "e2e_ms")

MAX_DURATION_S: Final = 30 * 24 * 3600.0
"""The longest any duration (a step, a deadline, a warmup) may be: 30 days."""
MIN_RATE: Final = 0.001
"""The slowest rate, one request every 1,000 s: below it a step sends nothing in its time."""
MAX_RATE: Final = 1_000_000.0
"""The fastest rate, far above what one client machine can send."""

_MOCK_FIELDS: Final = (
    "mock_workers",
    "mock_ttft_ms",
    "mock_itl_ms",
    "mock_faults",
    "mock_record_requests",
)


class RunConfig(BaseModel):
    """Everything `assay run` needs, as plain values; see `assay run --help` for each key."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    # Target
    target: str | None = None
    endpoint: Endpoint = Endpoint.chat
    model: str | None = None
    # None reads OPENAI_API_KEY when set; a variable named here must be set (and not empty).
    api_key_env: str | None = None
    headers: SendableHeaders = {}
    # Header names whose values are secrets besides the auth-like ones (masked and redacted).
    secret_headers: tuple[str, ...] = ()
    # The header carrying each request's UUID; "none" sends no id.
    request_id_header: str = "X-Request-Id"
    insecure: bool = False
    ca_bundle: Path | None = None
    # Retry a target that is still starting (refused, 429/503, no model yet) this long.
    wait_ready: float = Field(default=0.0, ge=0, allow_inf_nan=False)
    # One request before the load checks that the endpoint answers (a real target only)
    probe: bool = True
    # Load
    profile: ProfileKind = "throughput"
    rate: float | None = Field(default=None, gt=0, allow_inf_nan=False)
    concurrency: int | None = Field(default=None, gt=0)
    sweep_rates: int = Field(default=5, gt=0)
    trace: Path | None = None
    replay_speed: float = Field(default=1.0, gt=0)
    trace_block_tokens: int = Field(default=512, gt=0)
    processes: int | None = Field(default=None, gt=0)
    # Where the load slices run: local processes, or Ray actors spread over a Ray cluster.
    engine: Literal["local", "ray"] = "local"
    # The Ray cluster's address (HOST:PORT of its head, or "auto"); None starts a local Ray.
    ray_address: str | None = None
    # Ray actors, one load slice each (default: one per CPU of the cluster).
    ray_workers: int | None = Field(default=None, gt=0)
    # Constraints
    max_seconds: float | None = Field(default=None, gt=0, allow_inf_nan=False, le=MAX_DURATION_S)
    max_requests: int | None = Field(default=None, gt=0)
    max_errors: int | None = Field(default=None, gt=0)
    stop_error_rate: float | None = Field(default=None, gt=0, le=1, allow_inf_nan=False)
    warmup_seconds: float = Field(default=0.0, ge=0, allow_inf_nan=False, le=MAX_DURATION_S)
    cooldown_seconds: float = Field(default=0.0, ge=0, allow_inf_nan=False, le=MAX_DURATION_S)
    # Data
    data: Path | None = None
    data_columns: dict[str, str] = {}
    multi_turn: bool = False
    turns: int = Field(default=1, ge=1)
    think_time_ms: float = Field(default=0.0, ge=0)
    prompt_tokens: str = "256"
    output_tokens: str = "128"
    shared_prefix_tokens: int = Field(default=0, ge=0)
    tokenizer: str | None = None
    stream: bool = True
    ignore_eos: bool = False
    continuous_usage_stats: bool = False
    seed: int = 42
    # Request fields: the typed ones first, then `extra_body`, merged into every request body
    temperature: float | None = Field(default=None, ge=0)
    top_p: float | None = Field(default=None, gt=0, le=1)
    stop: tuple[str, ...] = ()
    request_seed: int | None = None
    extra_body: dict[str, JsonValue] = {}
    # Validation and validity
    validators: tuple[str, ...] = ()
    default_validators: bool = True
    strict: bool = False
    allow_missing_done: bool = False
    max_error_rate: float = Field(default=0.05, ge=0, le=1, allow_inf_nan=False)
    max_not_sent_rate: float = Field(default=0.05, ge=0, le=1, allow_inf_nan=False)
    slo: dict[str, float] = {}
    # Transport deadlines (seconds); every duration is finite (JSON's `Infinity` or `inf` on
    # the command line would overflow the deadlines) and at most MAX_DURATION_S
    timeout_connect: float = Field(default=10.0, gt=0, allow_inf_nan=False, le=MAX_DURATION_S)
    timeout_first_token: float = Field(default=60.0, gt=0, allow_inf_nan=False, le=MAX_DURATION_S)
    timeout_idle: float = Field(default=30.0, gt=0, allow_inf_nan=False, le=MAX_DURATION_S)
    timeout_total: float = Field(default=600.0, gt=0, allow_inf_nan=False, le=MAX_DURATION_S)
    max_response_bytes: int = Field(default=64 * 1024 * 1024, gt=0)
    # Output
    output_dir: Path | None = None
    # The embedded mock (used when no target is given)
    mock_workers: int = Field(default=1, gt=0)
    mock_ttft_ms: float = Field(default=40.0, ge=0, allow_inf_nan=False, le=MAX_DURATION_S * 1000)
    mock_itl_ms: float = Field(default=8.0, ge=0, allow_inf_nan=False, le=MAX_DURATION_S * 1000)
    mock_faults: dict[str, float] = {}
    # A JSONL file that receives every request the embedded mock receives (see `assay mock`)
    mock_record_requests: Path | None = None
    # The server's own metrics: a URL, "off", or None for the target's /metrics if it answers
    server_metrics: str | None = None
    server_metrics_interval: float = Field(default=1.0, gt=0, le=3600)

    @field_validator("request_id_header")
    @classmethod
    def _request_id_header_name(cls, value: str) -> str:
        if value.lower() != "none":
            problem = check_header(value, "")
            if problem is not None:
                raise ValueError(f"{problem} (or 'none' to send no request id)")
        return value

    @field_serializer("headers")
    def _mask_secret_headers(self, value: dict[str, str]) -> dict[str, str]:
        return mask_headers(value, self.secret_headers)

    @field_serializer("target")
    def _mask_url_password(self, value: str | None) -> str | None:
        return None if value is None else mask_url(value)

    @model_validator(mode="before")
    @classmethod
    def _plain_values(cls, data: Any) -> Any:
        """Refuse booleans where a number belongs (`max_requests: true` is not 1) and text with
        control characters or bytes that are not UTF-8 (a header with CR/LF, a binary value)."""
        if isinstance(data, dict):
            for key, value in data.items():
                if key in _NUMERIC_FIELDS and _holds_bool(value):
                    raise ValueError(f"{_flag(key)}: expected a number, not {value!r}")
                problem = _bad_text(value)
                if problem is not None:
                    raise ValueError(f"{_flag(key)}: {problem}")
        return data

    @field_validator("target")
    @classmethod
    def _target_is_a_base_url(cls, target: str | None) -> str | None:
        return None if target is None else check_target(target)

    @field_validator("rate")
    @classmethod
    def _rate_is_sane(cls, rate: float | None) -> float | None:
        if rate is not None and not MIN_RATE <= rate <= MAX_RATE:
            raise ValueError(
                f"{rate:g} requests/s is outside {MIN_RATE:g} to {MAX_RATE:,.0f} requests/s"
            )
        return rate

    @model_validator(mode="after")
    def _no_flag_is_ignored(self) -> Self:
        """A flag the run would not use is refused: it says the user expected something else."""
        given = self.model_fields_set
        if "rate" in given and self.profile not in RATE_KINDS:
            raise ValueError(
                f"--rate applies to the constant and poisson profiles, not {self.profile}"
                + (" (a sweep measures its rates; --sweep-rates sets how many)"
                   if self.profile == "sweep" else "")
            )  # fmt: skip
        if "concurrency" in given and self.profile not in CONCURRENCY_KINDS:
            why = "one request at a time" if self.profile == "synchronous" else "an open loop"
            raise ValueError(f"--concurrency does not apply to profile {self.profile} ({why})")
        if "sweep_rates" in given and self.profile != "sweep":
            raise ValueError(f"--sweep-rates applies to profile sweep, not {self.profile}")
        if self.data is not None:
            for key in ("prompt_tokens", "shared_prefix_tokens"):
                if key in given:
                    raise ValueError(
                        f"{_flag(key)} does not apply with --data (the file's prompts are sent)"
                    )
        if self.endpoint is Endpoint.embeddings:
            ignored: list[str] = ["output_tokens"] if "output_tokens" in given else []
            ignored += [
                key for key in ("ignore_eos", "stream") if key in given and getattr(self, key)
            ]
            if ignored:
                raise ValueError(
                    f"{', '.join(map(_flag, ignored))} does not apply to the embeddings endpoint "
                    "(an embedding has no output tokens and is never streamed)"
                )
        if self.target is not None:
            mock = [_flag(key) for key in _MOCK_FIELDS if key in given]
            if mock:
                raise ValueError(
                    f"{', '.join(mock)}: only for the embedded mock, "
                    "which does not run with --target"
                )
        return self

    @field_validator("ray_address")
    @classmethod
    def _ray_address_is_host_port(cls, address: str | None) -> str | None:
        if address is None or address == "auto":
            return address
        host, colon, port = address.rpartition(":")
        if not colon or not host or "/" in address or not port.isdigit():
            raise ValueError(
                f"HOST:PORT expected (the head node's GCS address, as "
                f"`ray start --head` prints it) or auto, not {address!r}"
            )
        return address

    @model_validator(mode="after")
    def _engine_flags_match(self) -> Self:
        given = self.model_fields_set
        if self.engine != "ray":
            ray_only = [_flag(key) for key in ("ray_address", "ray_workers") if key in given]
            if ray_only:
                raise ValueError(f"{', '.join(ray_only)} applies to --engine ray")
        elif "processes" in given:
            raise ValueError(
                "--processes counts local load processes; with --engine ray the load runs in "
                "Ray actors (--ray-workers N)"
            )
        return self

    @model_validator(mode="after")
    def _profile_has_its_parameters(self) -> Self:
        if self.profile in RATE_KINDS and self.rate is None:
            raise ValueError(f"profile {self.profile} needs a rate (--rate R requests/s)")
        if self.profile == "replay" and self.trace is None:
            raise ValueError("profile replay needs a trace (--trace FILE)")
        if self.trace is not None and self.profile != "replay":
            raise ValueError("--trace is replayed by --profile replay")
        if self.trace is not None and self.data is not None:
            raise ValueError("--trace holds the requests; it cannot be combined with --data")
        if self.multi_turn and self.data is None:
            raise ValueError("--multi-turn runs the conversations of --data FILE as sessions")
        if self.turns > 1 and self.data is not None:
            raise ValueError("--turns makes synthetic sessions; with --data use --multi-turn")
        if self.sessions and (self.trace is not None or self.endpoint is Endpoint.embeddings):
            raise ValueError("multi-turn sessions need a chat, completions or responses load")
        if self.think_time_ms and not self.sessions:
            raise ValueError("--think-time-ms is the pause between the turns of a session")
        if self.profile == "concurrent" and self.concurrency is None:
            raise ValueError("profile concurrent needs --concurrency N")
        if (self.warmup_seconds or self.cooldown_seconds) and self.max_seconds is None:
            raise ValueError("--warmup-seconds and --cooldown-seconds need --max-seconds")
        columns = sorted(set(self.data_columns) - set(PromptColumns.model_fields))
        if columns:
            raise ValueError(
                f"unknown data column role {', '.join(columns)} "
                f"(known: {', '.join(PromptColumns.model_fields)})"
            )
        unknown = sorted(set(self.slo) - set(SLO_KEYS))
        if unknown:
            raise ValueError(f"unknown SLO {', '.join(unknown)} (known: {', '.join(SLO_KEYS)})")
        if any(value <= 0 for value in self.slo.values()):
            raise ValueError("SLO thresholds must be positive milliseconds")
        metrics = self.server_metrics
        if (
            metrics is not None
            and metrics != "off"
            and not metrics.startswith(("http://", "https://"))
        ):
            raise ValueError(f"--server-metrics takes an http(s) URL or off, not {metrics!r}")
        return self

    def request_fields(self) -> dict[str, JsonValue]:
        """What goes into every request body: the typed fields, then `extra_body` over them.

        >>> RunConfig(temperature=0.0, extra_body={"temperature": 0.5, "top_k": 4}).request_fields()
        {'temperature': 0.5, 'top_k': 4}
        """
        fields: dict[str, JsonValue] = {}
        if self.temperature is not None:
            fields["temperature"] = self.temperature
        if self.top_p is not None:
            fields["top_p"] = self.top_p
        if self.stop:
            fields["stop"] = list(self.stop)
        if self.request_seed is not None:
            fields["seed"] = self.request_seed
        return {**fields, **self.extra_body}

    @property
    def sessions(self) -> bool:
        """Whether the load is multi-turn sessions (from data, or synthetic)."""
        return self.multi_turn or self.turns > 1

    @property
    def load_processes(self) -> int:
        """Load-generating processes: `processes`, else one per usable CPU."""
        return self.processes or usable_cpus()

    @property
    def bounded(self) -> bool:
        """Whether a constraint or a finite trace ends the run."""
        return (
            self.max_seconds is not None or self.max_requests is not None or self.trace is not None
        )


FIELD_NAMES: Final = frozenset(RunConfig.model_fields)


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


def _numeric(annotation: object) -> bool:
    kinds = get_args(annotation) or (annotation,)
    return any(kind in (int, float) or _numeric_dict(kind) for kind in kinds)


def _numeric_dict(annotation: object) -> bool:
    args = get_args(annotation)
    return len(args) == 2 and args[1] in (int, float)


_NUMERIC_FIELDS: Final = frozenset(
    name for name, info in RunConfig.model_fields.items() if _numeric(info.annotation)
)


def _holds_bool(value: object) -> bool:
    if isinstance(value, dict):
        return any(isinstance(item, bool) for item in value.values())
    return isinstance(value, bool)


def _bad_text(value: object) -> str | None:
    """What is wrong with the text in `value` (a string, a path, or a map or list of them).

    The text itself is not quoted back: it may be a secret (a header's value).

    >>> _bad_text({"X-Team": "infra\\r\\nInjected: 1"})
    "'X-Team': holds the control character U+000D"
    """
    match value:
        case str() | Path():
            for char in str(value):
                category = unicodedata.category(char)
                if category == "Cs":
                    return "holds bytes that are not UTF-8 text"
                if category == "Cc" and char != "\t":
                    return f"holds the control character U+{ord(char):04X}"
            return None
        case dict():
            for key, item in value.items():
                problem = _bad_text(key) or _bad_text(item)
                if problem is not None:
                    return f"{(_bad_text(key) and 'a name') or repr(key)}: {problem}"
            return None
        case list() | tuple():
            return next(filter(None, map(_bad_text, value)), None)
        case _:
            return None


# The keys whose flag is not simply the key with dashes.
_FLAGS: Final = {
    "headers": "--header",
    "validators": "--validator",
    "default_validators": "--no-default-validators",
    "mock_faults": "--mock-fault",
}


def _flag(key: str) -> str:
    return _FLAGS.get(key, f"--{key.replace('_', '-')}")


def load_config_file(path: Path) -> dict[str, Any]:
    """The raw keys of a TOML or JSON config file, dashes folded to underscores.

    Unknown keys are an error naming the valid ones, so a typo never silently does nothing.
    """
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        raise ConfigError(f"cannot read config file {path}: {error.strerror or error}") from None
    except UnicodeDecodeError as error:
        raise ConfigError(
            f"config file {path} is not UTF-8 text (byte {error.start}); is it a binary file?"
        ) from None
    try:
        match path.suffix.lower():
            case ".toml":
                raw: object = tomllib.loads(text)
            case ".json":
                raw = json.loads(text)
            case other:
                raise ConfigError(
                    f"config file {path}: unknown extension {other or '(none)'!r}; "
                    "use .toml or .json"
                )
    except (tomllib.TOMLDecodeError, json.JSONDecodeError) as error:
        raise ConfigError(f"config file {path} is not valid: {error}") from None
    if not isinstance(raw, dict):
        raise ConfigError(f"config file {path} must hold a table of keys, not {type(raw).__name__}")
    keys = {str(key).replace("-", "_"): value for key, value in raw.items()}
    unknown = sorted(set(keys) - FIELD_NAMES)
    if unknown:
        raise ConfigError(
            f"config file {path}: unknown key {', '.join(unknown)}; "
            f"valid keys: {', '.join(sorted(FIELD_NAMES))}"
        )
    return keys


def build_config(file_keys: dict[str, Any], overrides: dict[str, Any]) -> RunConfig:
    """Merge file keys with flag overrides (flags win) and validate into a `RunConfig`.

    >>> build_config({"profile": "constant", "rate": 5}, {"rate": 10}).rate
    10.0
    >>> build_config({"extra_body": {"a": 1, "b": 2}}, {"extra_body": {"b": 3}}).extra_body
    {'a': 1, 'b': 3}
    """
    merged = {**file_keys, **{key: value for key, value in overrides.items() if value is not None}}
    file_extra, flag_extra = file_keys.get("extra_body"), overrides.get("extra_body")
    if isinstance(file_extra, dict) and isinstance(flag_extra, dict):
        # Request fields add up: the flags' objects are merged over the file's, key by key.
        merged["extra_body"] = {**file_extra, **flag_extra}
    try:
        return RunConfig.model_validate(merged)
    except ValidationError as error:
        raise ConfigError(describe_validation_error(error)) from None


def describe_validation_error(error: ValidationError) -> str:
    """One readable line per problem: `key: what is wrong`."""
    lines = []
    for problem in error.errors():
        where = ".".join(str(part) for part in problem["loc"]) or "config"
        message = str(problem["msg"]).removeprefix("Value error, ")
        lines.append(f"{where.replace('_', '-')}: {message}" if where != "config" else message)
    return "; ".join(lines)
