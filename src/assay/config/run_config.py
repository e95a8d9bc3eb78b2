"""The run configuration: one frozen model whose keys mirror the `assay run` flags.

A config file (TOML or JSON) holds the same keys (dashes or underscores); flags given on the
command line override the file. Validation errors become one `ConfigError` line per problem.
"""

from __future__ import annotations

import json
import os
import tomllib
from pathlib import Path
from typing import Any, Final, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, JsonValue, ValidationError, model_validator

from assay.core import Endpoint
from assay.data.file_source import PromptColumns
from assay.errors import ConfigError

ProfileKind = Literal[
    "synchronous", "concurrent", "throughput", "constant", "poisson", "sweep", "replay"
]

SLO_KEYS: Final = ("ttft_ms", "tpot_ms", "itl_ms", "e2e_ms")


class RunConfig(BaseModel):
    """Everything `assay run` needs, as plain values; see `assay run --help` for each key."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    # Target
    target: str | None = None
    endpoint: Endpoint = Endpoint.chat
    model: str | None = None
    api_key_env: str = "OPENAI_API_KEY"
    headers: dict[str, str] = {}
    insecure: bool = False
    # Load
    profile: ProfileKind = "throughput"
    rate: float | None = Field(default=None, gt=0)
    concurrency: int | None = Field(default=None, gt=0)
    sweep_rates: int = Field(default=5, gt=0)
    trace: Path | None = None
    replay_speed: float = Field(default=1.0, gt=0)
    trace_block_tokens: int = Field(default=512, gt=0)
    processes: int | None = Field(default=None, gt=0)
    # Constraints
    max_seconds: float | None = Field(default=None, gt=0)
    max_requests: int | None = Field(default=None, gt=0)
    max_errors: int | None = Field(default=None, gt=0)
    stop_error_rate: float | None = Field(default=None, gt=0, le=1)
    warmup_seconds: float = Field(default=0.0, ge=0)
    cooldown_seconds: float = Field(default=0.0, ge=0)
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
    max_error_rate: float = Field(default=0.05, ge=0, le=1)
    slo: dict[str, float] = {}
    # Transport deadlines (seconds)
    timeout_connect: float = Field(default=10.0, gt=0)
    timeout_first_token: float = Field(default=60.0, gt=0)
    timeout_idle: float = Field(default=30.0, gt=0)
    timeout_total: float = Field(default=600.0, gt=0)
    # Output
    output_dir: Path | None = None
    # The embedded mock (used when no target is given)
    mock_workers: int = Field(default=1, gt=0)
    mock_ttft_ms: float = Field(default=40.0, ge=0)
    mock_itl_ms: float = Field(default=8.0, ge=0)
    mock_faults: dict[str, float] = {}
    mock_record_requests: Path | None = None

    @model_validator(mode="after")
    def _profile_has_its_parameters(self) -> Self:
        if self.profile in ("constant", "poisson") and self.rate is None:
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
        """Load-generating processes: `processes`, else one per CPU."""
        return self.processes or os.cpu_count() or 1

    @property
    def bounded(self) -> bool:
        """Whether a constraint or a finite data file ends the run."""
        return (
            self.max_seconds is not None or self.max_requests is not None or self.trace is not None
        )


FIELD_NAMES: Final = frozenset(RunConfig.model_fields)


def load_config_file(path: Path) -> dict[str, Any]:
    """The raw keys of a TOML or JSON config file, dashes folded to underscores.

    Unknown keys are an error naming the valid ones, so a typo never silently does nothing.
    """
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        raise ConfigError(f"cannot read config file {path}: {error.strerror or error}") from None
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
