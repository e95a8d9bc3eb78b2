"""The run spec: every setting of one `assay run`, and the echo of it that its report keeps.

`RunSettings` declares the settings once, flat, under the keys of the `assay run` flags (a config
file uses the same keys). Two models read them:

- `RunConfig`, what a user asks for: unknown keys and settings that contradict each other are
  refused, one message per problem, before anything starts.
- `RunEcho`, what report.json keeps under `run_config`: the settings as the run *used* them
  (effective concurrency, injected faults, the resolved target and model, the constraints in
  force, ...). It reads every report.json ever written: a key it does not know is kept, and a
  value it no longer accepts is read as the default and written back as it was.

Nothing here does I/O: the machine's limits (CPUs, open files) are `assay.config.limits`.
"""

from __future__ import annotations

import hashlib
import json
import unicodedata
from pathlib import Path
from typing import Any, Final, Literal, Self, get_args

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    JsonValue,
    ModelWrapValidatorHandler,
    PrivateAttr,
    SerializerFunctionWrapHandler,
    ValidationError,
    ValidationInfo,
    field_serializer,
    field_validator,
    model_serializer,
    model_validator,
)

from assay.spec.constraints import Constraints
from assay.spec.endpoint import Answer, Carries, Endpoint, EndpointTraits
from assay.spec.limits import (
    ECHOED_FIELD_BYTES,
    MAX_EXTRA_BODY_BYTES,
    MAX_TOKENS_PER_REQUEST,
    MAX_TURNS,
)
from assay.spec.load import CONCURRENCY_KINDS, RATE_KINDS, ProfileKind, RampCurve
from assay.spec.source import PromptColumns
from assay.spec.target import SendableHeaders, check_header, check_target, mask_headers, mask_url
from assay.spec.validation import DEFAULT_MAX_ERROR_RATE, DEFAULT_MAX_NOT_SENT_RATE, slo_problem

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


class RunSettings(BaseModel):
    """Every setting of a run, flat, under its `assay run` key; see `assay run --help`.

    Secrets never leave it: a dump masks the header values that are credentials and the
    password of the target URL.
    """

    model_config = ConfigDict(frozen=True)

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
    # A W3C traceparent on every request, its ids derived from `seed` and the request id, the
    # sampled flag set on a `trace_sample` fraction of them.
    trace_context: bool = False
    trace_sample: float = Field(default=1.0, ge=0, le=1, allow_inf_nan=False)
    insecure: bool = False
    ca_bundle: Path | None = None
    # Retry a target that is still starting (refused, 429/503, no model yet) this long.
    wait_ready: float = Field(default=0.0, ge=0, allow_inf_nan=False)
    # One request before the load checks that the endpoint answers (a real target only)
    probe: bool = True
    # The model's context window in tokens, over what the server names (`max_model_len`);
    # 0 checks no request against a window.
    context_window: int | None = Field(default=None, ge=0)
    # Load
    profile: ProfileKind = "throughput"
    rate: float | None = Field(default=None, gt=0, allow_inf_nan=False)
    concurrency: int | None = Field(default=None, gt=0)
    sweep_rates: int = Field(default=5, gt=0)
    # A sweep over concurrency levels instead of rates: one concurrent step per level, in order.
    sweep_concurrency: tuple[int, ...] = ()
    # Gamma-distributed gaps of shape F for the rate profiles (1 is Poisson, below 1 burstier).
    burstiness: float | None = Field(default=None, gt=0, allow_inf_nan=False)
    # The ramp_up profile: its rate moves from the start rate to the end rate over the step.
    ramp_up: RampCurve | None = None
    ramp_up_start_rate: float | None = Field(default=None, gt=0, allow_inf_nan=False)
    ramp_up_end_rate: float | None = Field(default=None, gt=0, allow_inf_nan=False)
    trace: Path | None = None
    replay_speed: float = Field(default=1.0, gt=0)
    trace_block_tokens: int = Field(default=512, gt=0, le=MAX_TOKENS_PER_REQUEST)
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
    # Reuse the rows of --data, in file order, pass after pass, until the run's limits.
    data_cycle: bool = False
    multi_turn: bool = False
    turns: int = Field(default=1, ge=1, le=MAX_TURNS)
    think_time_ms: float = Field(default=0.0, ge=0)
    prompt_tokens: str = "256"
    output_tokens: str = "128"
    # Rerank and score: documents per request, and the token count of each (the query's is
    # `prompt_tokens`)
    documents: int = Field(default=8, ge=1, le=100_000)
    document_tokens: str = "128"
    shared_prefix_tokens: int = Field(default=0, ge=0)
    # Synthetic images per chat request (N or a distribution, as token counts), their size
    # (WxH) and encoding; synthetic audio seconds (chat input, or the transcription's upload)
    images: str = "0"
    image_size: str = "512x512"
    image_format: Literal["png", "jpeg"] = "png"
    audio_seconds: float = Field(default=0.0, ge=0, le=3600, allow_inf_nan=False)
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
    max_error_rate: float = Field(default=DEFAULT_MAX_ERROR_RATE, ge=0, le=1, allow_inf_nan=False)
    max_not_sent_rate: float = Field(
        default=DEFAULT_MAX_NOT_SENT_RATE, ge=0, le=1, allow_inf_nan=False
    )
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

    @field_serializer("headers")
    def _mask_secret_headers(self, value: dict[str, str]) -> dict[str, str]:
        return mask_headers(value, self.secret_headers)

    @field_serializer("target")
    def _mask_url_password(self, value: str | None) -> str | None:
        return None if value is None else mask_url(value)

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
    def bounded(self) -> bool:
        """Whether a constraint or a finite trace ends the run."""
        return (
            self.max_seconds is not None or self.max_requests is not None or self.trace is not None
        )


class RunConfig(RunSettings):
    """Everything `assay run` needs, as plain values; see `assay run --help` for each key.

    Unknown keys are refused, and so is a setting the run would not use (it says the user
    expected something else).
    """

    # A number where text is expected is its text: `output_tokens = 32` in a TOML file is the
    # flag's "32" (a count, or a distribution such as "normal:128,32").
    model_config = ConfigDict(frozen=True, extra="forbid", coerce_numbers_to_str=True)

    @field_validator("request_id_header")
    @classmethod
    def _request_id_header_name(cls, value: str) -> str:
        if value.lower() != "none":
            problem = check_header(value, "")
            if problem is not None:
                raise ValueError(f"{problem} (or 'none' to send no request id)")
        return value

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

    @field_validator("extra_body")
    @classmethod
    def _extra_body_is_bounded(cls, extra: dict[str, JsonValue]) -> dict[str, JsonValue]:
        size = len(json.dumps(extra, ensure_ascii=False).encode())
        if size > MAX_EXTRA_BODY_BYTES:
            raise ValueError(
                f"{size:,} bytes of JSON, above the {MAX_EXTRA_BODY_BYTES:,} sent with every "
                "request (see docs/security.md)"
            )
        return extra

    @field_validator("target")
    @classmethod
    def _target_is_a_base_url(cls, target: str | None) -> str | None:
        return None if target is None else check_target(target)

    @model_validator(mode="before")
    @classmethod
    def _ramp_up_is_its_profile(cls, data: Any) -> Any:
        """`--ramp-up CURVE` alone runs the ramp_up profile (no `--profile ramp_up` needed)."""
        if isinstance(data, dict) and data.get("ramp_up") is not None and "profile" not in data:
            return {**data, "profile": "ramp_up"}
        return data

    @field_validator("sweep_concurrency", mode="before")
    @classmethod
    def _levels_from_text(cls, value: Any) -> Any:
        """Levels as `1,4,16,64` (the flag's form) or a list (a config file's)."""
        if not isinstance(value, str):
            return value
        levels = []
        for part in value.split(","):
            level = part.strip()
            if not level.isdigit() or int(level) == 0:
                raise ValueError(
                    f"{level!r} is not a concurrency level: give whole numbers above 0, "
                    "comma-separated (e.g. 1,4,16,64)"
                )
            levels.append(int(level))
        return tuple(levels)

    @field_validator("sweep_concurrency")
    @classmethod
    def _levels_are_distinct(cls, levels: tuple[int, ...]) -> tuple[int, ...]:
        if any(level <= 0 for level in levels):
            raise ValueError(f"concurrency levels must be above 0, not {list(levels)}")
        if len(set(levels)) != len(levels):
            raise ValueError(f"concurrency levels repeat: {list(levels)}")
        return levels

    @field_validator("rate", "ramp_up_start_rate", "ramp_up_end_rate")
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
        if "trace_sample" in given and not self.trace_context:
            raise ValueError(
                "--trace-sample sets the sampled flag of the traceparent that --trace-context "
                "sends; add --trace-context"
            )
        if "sweep_rates" in given and self.profile != "sweep":
            raise ValueError(f"--sweep-rates applies to profile sweep, not {self.profile}")
        if self.sweep_concurrency:
            if self.profile != "sweep":
                raise ValueError(
                    f"--sweep-concurrency applies to profile sweep, not {self.profile}"
                )
            for key in ("sweep_rates", "concurrency"):
                if key in given:
                    raise ValueError(
                        f"{_flag(key)} does not apply with --sweep-concurrency "
                        "(its levels are the steps)"
                    )
        if self.burstiness is not None and self.profile not in _ARRIVAL_KINDS:
            raise ValueError(
                "--burstiness shapes the arrivals of the constant, poisson and ramp_up "
                f"profiles, not {self.profile}"
            )
        if self.data_cycle and self.data is None:
            raise ValueError("--data-cycle reuses the rows of --data FILE")
        if self.data is not None:
            for key in ("prompt_tokens", "shared_prefix_tokens"):
                if key in given:
                    raise ValueError(
                        f"{_flag(key)} does not apply with --data (the file's prompts are sent)"
                    )
            for key in ("documents", "document_tokens"):
                if key in given:
                    raise ValueError(
                        f"{_flag(key)} does not apply with --data (the file's documents are sent)"
                    )
        traits = self.endpoint.traits
        carried = [key for key in ("documents", "document_tokens") if key in given]
        if carried and not _carries_documents(traits):
            raise ValueError(
                f"{', '.join(map(_flag, carried))} applies to the rerank and score endpoints, "
                f"not {self.endpoint} (its requests carry no documents)"
            )
        ignored: list[str] = []
        if not traits.generates:
            ignored += ["output_tokens"] if "output_tokens" in given else []
            ignored += ["ignore_eos"] if "ignore_eos" in given and self.ignore_eos else []
        if not traits.streams and "stream" in given and self.stream:
            ignored.append("stream")
        if ignored:
            raise ValueError(
                f"{', '.join(map(_flag, ignored))} does not apply to the {self.endpoint} "
                f"endpoint ({_what_it_lacks(traits)})"
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
    def _media_fits_the_endpoint(self) -> Self:
        """Images go in chat messages, audio in chat or a transcription's upload; the
        transcriptions endpoint needs audio, and only synthetic audio feeds it."""
        given = self.model_fields_set
        traits = self.endpoint.traits
        image_flags = [_flag(key) for key in ("images", "image_size", "image_format")
                       if key in given]  # fmt: skip
        if image_flags and not traits.takes_images:
            raise ValueError(
                f"{', '.join(image_flags)}: images go in chat messages (--endpoint chat), "
                f"not to the {self.endpoint} endpoint"
            )
        if image_flags and self.data is not None:
            raise ValueError(
                f"{', '.join(image_flags)} does not apply with --data (a row's `images` are sent)"
            )
        audio_given = "audio_seconds" in given and self.audio_seconds > 0
        if (image_flags or audio_given) and self.sessions:
            media = [*image_flags, *(["--audio-seconds"] if audio_given else [])]
            raise ValueError(
                f"{', '.join(media)}: multi-turn sessions send text turns only; images and "
                "audio go with single requests"
            )
        if audio_given and not traits.takes_audio:
            raise ValueError(
                f"--audio-seconds goes to chat or transcriptions, not to the {self.endpoint} "
                "endpoint"
            )
        if traits.needs_audio:
            if self.data is not None or self.trace is not None:
                raise ValueError(
                    f"the {self.endpoint} endpoint uploads synthetic audio (--audio-seconds); "
                    "--data and --trace hold no audio"
                )
            if self.audio_seconds <= 0:
                raise ValueError(
                    f"--endpoint {self.endpoint} needs --audio-seconds S (the audio it uploads)"
                )
            unused = [_flag(key) for key in ("prompt_tokens", "shared_prefix_tokens", "ignore_eos")
                      if key in given]  # fmt: skip
            if unused:
                raise ValueError(
                    f"{', '.join(unused)} does not apply to the {self.endpoint} endpoint "
                    "(it sends audio, not a prompt)"
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
        if self.sessions and (
            self.trace is not None or not self.endpoint.traits.takes_conversation
        ):
            raise ValueError("multi-turn sessions need a chat, completions or responses load")
        if self.think_time_ms and not self.sessions:
            raise ValueError("--think-time-ms is the pause between the turns of a session")
        if self.profile == "concurrent" and self.concurrency is None:
            raise ValueError("profile concurrent needs --concurrency N")
        self._ramp_has_its_parameters()
        if self.data_cycle and self.max_seconds is None and self.max_requests is None:
            raise ValueError(
                "--data-cycle reuses the rows without end: bound the run with --max-requests "
                "or --max-seconds"
            )
        if (self.warmup_seconds or self.cooldown_seconds) and self.max_seconds is None:
            raise ValueError("--warmup-seconds and --cooldown-seconds need --max-seconds")
        columns = sorted(set(self.data_columns) - set(PromptColumns.model_fields))
        if columns:
            raise ValueError(
                f"unknown data column role {', '.join(columns)} "
                f"(known: {', '.join(PromptColumns.model_fields)})"
            )
        problem = slo_problem(self.slo)
        if problem is not None:
            raise ValueError(problem)
        metrics = self.server_metrics
        if (
            metrics is not None
            and metrics != "off"
            and not metrics.startswith(("http://", "https://"))
        ):
            raise ValueError(f"--server-metrics takes an http(s) URL or off, not {metrics!r}")
        return self

    def _ramp_has_its_parameters(self) -> None:
        rates = [key for key in _RAMP_RATES if getattr(self, key) is not None]
        if self.profile != "ramp_up":
            if self.ramp_up is not None:
                raise ValueError(
                    f"--ramp-up runs the ramp_up profile, not {self.profile} (leave out "
                    "--profile; --burstiness shapes its arrivals)"
                )
            if rates:
                raise ValueError(f"{', '.join(map(_flag, rates))} applies with --ramp-up")
            return
        if self.ramp_up is None:
            raise ValueError("profile ramp_up needs --ramp-up linear|exponential")
        missing = [_flag(key) for key in _RAMP_RATES if key not in rates]
        if missing:
            raise ValueError(f"--ramp-up needs {' and '.join(missing)} (requests/s)")
        if self.max_seconds is None and self.max_requests is None:
            raise ValueError(
                "--ramp-up needs the step's length: --max-seconds (the ramp's duration) or "
                "--max-requests (the time the ramp takes to offer them)"
            )


_ARRIVAL_KINDS: Final[tuple[ProfileKind, ...]] = ("constant", "poisson", "ramp_up")
_RAMP_RATES: Final = ("ramp_up_start_rate", "ramp_up_end_rate")


def _answer_noun(answer: Answer) -> str:
    match answer:
        case Answer.vectors:
            return "an embedding"
        case Answer.scores:
            return "a ranking"
        case Answer.text:
            return "its answer"


def _carries_documents(traits: EndpointTraits) -> bool:
    match traits.carries:
        case Carries.documents:
            return True
        case Carries.messages | Carries.prompt | Carries.inputs | Carries.audio:
            return False


def _what_it_lacks(traits: EndpointTraits) -> str:
    """Why output-token and streaming flags mean nothing to an endpoint, in words."""
    lacks = [
        words
        for words, lacking in (
            ("has no output tokens", not traits.generates),
            ("is never streamed", not traits.streams),
        )
        if lacking
    ]
    return f"{_answer_noun(traits.answer)} {' and '.join(lacks)}"


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


def flag_of(key: str) -> str:
    """The `assay run` flag that sets the key `key`, as messages name it.

    >>> flag_of("output_tokens"), flag_of("mock_faults")
    ('--output-tokens', '--mock-fault')
    """
    return _flag(key)


class _AsWritten(BaseModel):
    """A stored echo: read typed, written back as it was read.

    Only the keys it was given are written (a key an older report lacks is read as its default
    and not added), a key it does not know is kept, and a stored value it no longer accepts (a
    rule tightened since the report was written) is read as the default and written back as it
    was. Leniency is for stored JSON only: built in Python, a bad value is a bug and raises.
    """

    model_config = ConfigDict(frozen=True, extra="allow")

    _kept_as_written: dict[str, Any] = PrivateAttr(default_factory=dict)
    # The order of the keys as stored, when it is not the fields' order (an older writer's).
    _stored_order: tuple[str, ...] | None = PrivateAttr(default=None)

    @model_validator(mode="wrap")
    @classmethod
    def _read_leniently(
        cls, data: Any, handler: ModelWrapValidatorHandler[Self], info: ValidationInfo
    ) -> Self:
        stored = info.mode == "json" and isinstance(data, dict)
        try:
            echo = handler(data)
        except ValidationError as error:
            if not stored:
                raise
            refused = {
                str(problem["loc"][0])
                for problem in error.errors()
                if problem["loc"] and problem["loc"][0] in cls.model_fields
            }
            if not refused:
                raise
            echo = handler({key: value for key, value in data.items() if key not in refused})
            echo._kept_as_written = {key: data[key] for key in refused}
        if stored:
            known = [key for key in cls.model_fields if key in data]
            if tuple(data) != (*known, *(key for key in data if key not in cls.model_fields)):
                echo._stored_order = tuple(data)  # kept only when it is not the fields' order
        return echo

    @model_serializer(mode="wrap")
    def _write_as_read(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        dumped: dict[str, Any] = handler(self)
        kept = self._kept_as_written
        written = self.model_fields_set | kept.keys()
        values = {key: kept.get(key, value) for key, value in dumped.items() if key in written}
        if self._stored_order is None:
            return values
        # As stored, then whatever was set since (a revalidation's keys), in the fields' order.
        stored = [key for key in self._stored_order if key in values]
        since = [key for key in values if key not in self._stored_order]
        return {key: values[key] for key in (*stored, *since)}


class EchoedConstraints(_AsWritten, Constraints):
    """The constraints in force, as a report keeps them (older reports may name the
    `--stop-error-rate` limit `max_error_rate`: it is kept, under that name)."""

    model_config = ConfigDict(frozen=True, extra="allow")


def echoed_fields(fields: dict[str, JsonValue]) -> dict[str, JsonValue]:
    """`fields` as report.json keeps them: a value whose JSON is longer than
    `ECHOED_FIELD_BYTES` by its size and SHA-256, the others as they are.

    >>> echoed_fields({"top_k": 4, "blob": "x" * 5000})["blob"][:29]
    '(5,002 bytes of JSON, sha256 '
    """
    echoed: dict[str, JsonValue] = {}
    for key, value in fields.items():
        text = json.dumps(value, ensure_ascii=False).encode()
        echoed[key] = (
            value
            if len(text) <= ECHOED_FIELD_BYTES
            else f"({len(text):,} bytes of JSON, sha256 {hashlib.sha256(text).hexdigest()})"
        )
    return echoed


class RunEcho(_AsWritten, RunSettings):
    """The run's settings as report.json keeps them (`run_config`): what the run used.

    Beside the settings (with `concurrency`, `mock_faults` and `processes` the effective ones):
    the target and model it resolved, the validator chain, the constraints in force, and
    whether it was interrupted or degraded; `revalidated_at` when `assay revalidate` wrote it.
    `echo["key"]` gives the JSON value under a key, for code written when this was a dict.
    """

    model_config = ConfigDict(frozen=True, extra="allow")

    resolved_target: str | None = None
    resolved_model: str | None = None
    validator_chain: str | None = None
    constraints: EchoedConstraints | None = None
    interrupted: bool = False
    degraded: bool = False
    revalidated_at: str | None = None

    @classmethod
    def of(
        cls,
        config: RunSettings,
        *,
        concurrency: int | None,
        mock_faults: dict[str, float],
        resolved_target: str | None,
        resolved_model: str | None,
        validator_chain: str,
        processes: int,
        constraints: Constraints,
        interrupted: bool,
        degraded: bool,
    ) -> RunEcho:
        """The echo of a run of `config`, with the settings it used in place of its defaults
        (the target and model None when the run crashed before it resolved them).

        >>> echo = RunEcho.of(RunConfig(target="http://bob:pw-123@h:1"), concurrency=64,
        ...     mock_faults={}, resolved_target="http://h:1", resolved_model="m",
        ...     validator_chain="default chat chain", processes=2, constraints=Constraints(),
        ...     interrupted=False, degraded=False)
        >>> echo.target, echo.processes, echo.constraints.error_rate_window
        ('http://bob:**********@h:1', 2, 50)
        """
        return cls.model_validate(
            {
                **config.model_dump(mode="json"),
                "concurrency": concurrency,
                "mock_faults": mock_faults,
                "resolved_target": None if resolved_target is None else mask_url(resolved_target),
                "resolved_model": resolved_model,
                "validator_chain": validator_chain,
                "processes": processes,
                "constraints": constraints.model_dump(mode="json"),
                "extra_body": echoed_fields(config.extra_body),
                "interrupted": interrupted,
                "degraded": degraded,
            }
        )

    def revalidated(self, *, validator_chain: str, at: str, max_error_rate: float) -> RunEcho:
        """The echo of the same run judged again by `assay revalidate` at `at` (ISO 8601).

        >>> again = RunEcho().revalidated(validator_chain="strict", at="2026", max_error_rate=0.1)
        >>> again.validator_chain, again.revalidated_at, again.max_error_rate
        ('strict', '2026', 0.1)
        """
        update = {
            "validator_chain": validator_chain,
            "revalidated_at": at,
            "max_error_rate": max_error_rate,
        }
        echo = self.model_copy(update=update)
        echo._kept_as_written = {
            key: value for key, value in self._kept_as_written.items() if key not in update
        }
        return echo

    def __getitem__(self, key: str) -> JsonValue:
        """The JSON value report.json holds under `key` (KeyError when it holds none)."""
        written: dict[str, JsonValue] = self.model_dump(mode="json")
        return written[key]


__all__ = [
    "MAX_DURATION_S",
    "MAX_RATE",
    "MIN_RATE",
    "EchoedConstraints",
    "RunConfig",
    "RunEcho",
    "RunSettings",
    "flag_of",
]
