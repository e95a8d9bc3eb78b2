"""The sections of a run's spec, each a small frozen model passed whole to the part that reads it
(`Target` is beside the target's checks in `assay.spec.target`, the load profile in
`assay.spec.load`; `assay.spec.run.RunConfig` holds them all).

A rule between two fields of one section lives on that section; its message names the fields
by their `assay run` flags, the keys users write.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Final, Literal, TypeAlias

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    JsonValue,
    field_validator,
    model_validator,
)

from assay.spec.flat import flag_of
from assay.spec.limits import (
    MAX_DURATION_S,
    MAX_EXTRA_BODY_BYTES,
    MAX_TOKENS_PER_REQUEST,
    MAX_TURNS,
)
from assay.spec.price import Price, price_of_setting
from assay.spec.source import PromptColumns
from assay.spec.target import MaskedUrl
from assay.spec.validation import DEFAULT_MAX_ERROR_RATE, DEFAULT_MAX_NOT_SENT_RATE, slo_problem

# A number where text is expected is its text: `output_tokens = 32` in a TOML file is the
# flag's "32" (a count, or a distribution such as "normal:128,32").
SECTION: Final = ConfigDict(frozen=True, extra="forbid", coerce_numbers_to_str=True)


class Request(BaseModel):
    """What every request asks beside its prompt: streaming, and the typed fields then
    `extra_body`, merged into every request body (see `fields`)."""

    model_config = SECTION

    stream: bool = True
    ignore_eos: bool = False
    temperature: float | None = Field(default=None, ge=0, allow_inf_nan=False)
    top_p: float | None = Field(default=None, gt=0, le=1)
    stop: tuple[str, ...] = ()
    seed: int | None = None
    extra_body: dict[str, JsonValue] = {}

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

    def fields(self) -> dict[str, JsonValue]:
        """What goes into every request body: the typed fields, then `extra_body` over them.

        >>> Request(temperature=0.0, extra_body={"temperature": 0.5, "top_k": 4}).fields()
        {'temperature': 0.5, 'top_k': 4}
        """
        typed = {"temperature": self.temperature, "top_p": self.top_p, "seed": self.seed}
        fields: dict[str, JsonValue] = {k: v for k, v in typed.items() if v is not None}
        if self.stop:
            fields["stop"] = list(self.stop)
        return {**fields, **self.extra_body}


IMAGE_FIELDS: Final = ("images", "image_size", "image_format")
# What a data file sends instead of the source fields it replaces.
_NOT_WITH_DATA: Final = {
    "the file's prompts are sent": ("prompt_tokens", "shared_prefix_tokens"),
    "the file's documents are sent": ("documents", "document_tokens"),
    "a row's `images` are sent": IMAGE_FIELDS,
    "its rows hold no audio": ("audio_seconds",),
}

# What a trace's rows decide for each request (`assay.data.trace`): given with --trace, ignored.
_NOT_WITH_TRACE: Final = (
    "prompt_tokens",
    "output_tokens",
    "shared_prefix_tokens",
    "documents",
    "document_tokens",
    *IMAGE_FIELDS,
    "audio_seconds",
)


class Source(BaseModel):
    """Where the requests come from: synthetic prompts (token counts, documents, images,
    audio; sessions with `turns`), the rows of a `data` file (sessions with `multi_turn`), or
    the requests of a `trace`."""

    model_config = SECTION

    data: Path | None = None
    data_columns: dict[str, str] = {}
    # Reuse the rows of `data`, in file order, pass after pass, until the run's limits.
    data_cycle: bool = False
    # Folders besides the data file's own that its rows' local images may be read from.
    allowed_media_paths: tuple[Path, ...] = ()
    multi_turn: bool = False
    turns: int = Field(default=1, ge=1, le=MAX_TURNS)
    think_time_ms: float = Field(default=0.0, ge=0, le=MAX_DURATION_S * 1000, allow_inf_nan=False)
    prompt_tokens: str = "256"
    output_tokens: str = "128"
    # Rerank and score: documents per request, and the token count of each (the query's is
    # `prompt_tokens`).
    documents: int = Field(default=8, ge=1, le=100_000)
    document_tokens: str = "128"
    shared_prefix_tokens: int = Field(default=0, ge=0)
    # Synthetic images per chat request (N or a distribution, as token counts), their size
    # (WxH) and encoding; synthetic audio seconds (chat input, or the transcription's upload).
    images: str = "0"
    image_size: str = "512x512"
    image_format: Literal["png", "jpeg"] = "png"
    audio_seconds: float = Field(default=0.0, ge=0, allow_inf_nan=False)  # at most: limits
    tokenizer: str | None = None
    trace: Path | None = None
    trace_block_tokens: int = Field(default=512, gt=0, le=MAX_TOKENS_PER_REQUEST)

    @property
    def sessions(self) -> bool:
        """Whether the load is multi-turn sessions (from data, or synthetic)."""
        return self.multi_turn or self.turns > 1

    @property
    def media_given(self) -> list[str]:
        """The media fields given: images (any of their fields), audio above 0 s."""
        given = [key for key in IMAGE_FIELDS if key in self.model_fields_set]
        audio = "audio_seconds" in self.model_fields_set and self.audio_seconds > 0
        return [*given, *(["audio_seconds"] if audio else [])]

    @model_validator(mode="after")
    def _data_rules(self) -> Source:
        problem = self._data_problem() or self._session_problem()
        if problem is not None:
            raise ValueError(problem)
        columns = sorted(set(self.data_columns) - set(PromptColumns.model_fields))
        if columns:
            raise ValueError(
                f"unknown data column role {', '.join(columns)} "
                f"(known: {', '.join(PromptColumns.model_fields)})"
            )
        return self

    def _data_problem(self) -> str | None:
        if self.data is None:
            return self._trace_problem() or self._synthetic_problem()
        if self.trace is not None:
            return "--trace holds the requests; it cannot be combined with --data"
        for why, replaced in _NOT_WITH_DATA.items():
            given = [key for key in replaced if key in self.given]
            if given:
                return f"{', '.join(map(flag_of, given))} does not apply with --data ({why})"
        return None

    def _trace_problem(self) -> str | None:
        """What only a trace uses, given without one; what a trace's rows decide, given with one."""
        if self.trace is None and "trace_block_tokens" in self.given:
            return (
                f"{flag_of('trace_block_tokens')} sizes the hash blocks of a Mooncake --trace FILE"
            )
        given = [key for key in _NOT_WITH_TRACE if key in self.given]
        if self.trace is not None and given:
            return (
                f"{', '.join(map(flag_of, given))} does not apply with --trace (the trace "
                "decides each request's prompt and output, and sends text alone)"
            )
        return None

    def _synthetic_problem(self) -> str | None:
        """What only a data file uses, given without one; image settings without images."""
        if self.allowed_media_paths:
            return (
                f"{flag_of('allowed_media_paths')} names folders the images of --data FILE may "
                "be read from"
            )
        if self.data_cycle:
            return f"{flag_of('data_cycle')} reuses the rows of --data FILE"
        if self.data_columns:
            return f"{flag_of('data_columns')} names the columns of --data FILE"
        shaping = [key for key in ("image_size", "image_format") if key in self.given]
        if shaping and self.images.strip() == "0":
            return (
                f"{', '.join(map(flag_of, shaping))} shapes the synthetic images of "
                f"{flag_of('images')} N, and none is sent"
            )
        return None

    @property
    def given(self) -> set[str]:
        """The fields given (flags, config keys), audio only above 0 s (0 sends none)."""
        given = set(self.model_fields_set)
        if not self.audio_seconds:
            given.discard("audio_seconds")
        return given

    def _session_problem(self) -> str | None:
        if self.multi_turn and self.data is None:
            return "--multi-turn runs the conversations of --data FILE as sessions"
        if self.turns > 1 and self.data is not None:
            return "--turns makes synthetic sessions; with --data use --multi-turn"
        if self.think_time_ms and not self.sessions:
            return "--think-time-ms is the pause between the turns of a session"
        media = self.media_given
        if media and self.sessions:
            return (
                f"{', '.join(map(flag_of, media))}: multi-turn sessions send text turns only; "
                "images and audio go with single requests"
            )
        return None


class Validation(BaseModel):
    """What a usable answer is (the validator chain) and what a valid run is (the error and
    not-sent limits, and the goodput SLOs in ms)."""

    model_config = SECTION

    validators: tuple[str, ...] = ()
    default_validators: bool = True
    strict: bool = False
    allow_missing_done: bool = False
    max_error_rate: float = Field(default=DEFAULT_MAX_ERROR_RATE, ge=0, le=1, allow_inf_nan=False)
    max_not_sent_rate: float = Field(
        default=DEFAULT_MAX_NOT_SENT_RATE, ge=0, le=1, allow_inf_nan=False
    )
    slo: dict[str, float] = {}

    @model_validator(mode="after")
    def _slo_is_known(self) -> Validation:
        problem = slo_problem(self.slo)
        if problem is not None:
            raise ValueError(problem)
        return self


class Engine(BaseModel):
    """Where the load slices run: `processes` local processes (None: as the run needs), or
    Ray actors on the cluster at `ray_address` (None starts a local Ray; `ray_workers` None:
    one actor per CPU of the cluster)."""

    model_config = SECTION

    kind: Literal["local", "ray"] = "local"
    processes: int | None = Field(default=None, gt=0)
    ray_address: str | None = None
    ray_workers: int | None = Field(default=None, gt=0)

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
    def _flags_match_the_engine(self) -> Engine:
        given = self.model_fields_set
        if self.kind != "ray":
            ray_only = [flag_of(key) for key in ("ray_address", "ray_workers") if key in given]
            if ray_only:
                raise ValueError(f"{', '.join(ray_only)} applies to --engine ray")
        elif "processes" in given:
            raise ValueError(
                "--processes counts local load processes; with --engine ray the load runs in "
                "Ray actors (--ray-workers N)"
            )
        return self


class Output(BaseModel):
    """Where the run's files go: `dir`, else a new folder under `runs/`."""

    model_config = SECTION

    dir: Path | None = None
    # The server's price (`--cost-per-hour`), which the report divides by the work served.
    cost_per_hour: Annotated[Price | None, BeforeValidator(price_of_setting)] = None


# What the embedded mock injects when the user names no faults: a few percent of the failures
# real servers produce, so a first run shows what assay catches (and stays a valid run).
DEMO_FAULTS: Final = {"empty_stream": 0.01, "truncated_stream": 0.005, "inband_error": 0.005}

LoadFault: TypeAlias = Literal["empty", "cut"]
"""How a finite mock's answer past its load goes bad (`--load-fault`, `--mock-load-fault`): empty,
or cut mid-stream (`assay.mock.capacity`)."""


class Mock(BaseModel):
    """The embedded mock, started when the run has no target: its processes, latencies (ms),
    injected fault rates (none named: `DEMO_FAULTS`) and a JSONL file receiving every request
    it receives."""

    model_config = SECTION

    workers: int = Field(default=1, gt=0)
    ttft_ms: float = Field(default=40.0, ge=0, allow_inf_nan=False, le=MAX_DURATION_S * 1000)
    itl_ms: float = Field(default=8.0, ge=0, allow_inf_nan=False, le=MAX_DURATION_S * 1000)
    faults: dict[str, float] = {}
    record_requests: Path | None = None
    # A finite server (see `assay mock --slots`): none of it by default.
    slots: int | None = Field(default=None, gt=0)
    tokens_per_s: float | None = Field(default=None, gt=0, allow_inf_nan=False)
    fault_past: int | None = Field(default=None, gt=0)
    load_fault: LoadFault = "empty"
    # A simulated GPU drawing this many watts, in the mock's /metrics (`--mock-gpu-watts`).
    gpu_watts: float | None = Field(default=None, gt=0, le=100_000, allow_inf_nan=False)

    def injected_faults(self) -> dict[str, float]:
        """The fault rates the mock injects: the chosen ones, else the demo faults.

        >>> Mock().injected_faults()["empty_stream"]
        0.01
        """
        return dict(self.faults) if self.faults else dict(DEMO_FAULTS)

    @model_validator(mode="after")
    def _load_fault_has_its_load(self) -> Mock:
        if self.load_fault != "empty" and self.fault_past is None:
            raise ValueError(
                f"{flag_of('mock_load_fault')} needs {flag_of('mock_fault_past')} (the load past "
                "which it strikes)"
            )
        return self


class ServerMetrics(BaseModel):
    """The server's own metrics: scraped from `url` ("off": not at all; None: the target's
    /metrics if it answers) every `interval` seconds; and a DCGM exporter's at `gpu_url`
    beside them, the GPUs' energy read from it alone."""

    model_config = SECTION

    # A password in either URL is masked wherever the section is stored (the report's echo);
    # the scrapes send it as Basic credentials.
    url: MaskedUrl | None = None
    interval: float = Field(default=1.0, gt=0, le=3600)
    gpu_url: MaskedUrl | None = None

    @model_validator(mode="after")
    def _url_or_off(self) -> ServerMetrics:
        url = self.url
        if url is not None and url != "off" and not url.startswith(("http://", "https://")):
            raise ValueError(f"--server-metrics takes an http(s) URL or off, not {url!r}")
        gpu = self.gpu_url
        if gpu is not None and not gpu.startswith(("http://", "https://")):
            raise ValueError(f"--gpu-metrics takes the http(s) URL of a DCGM exporter, not {gpu!r}")
        if "interval" in self.model_fields_set and url == "off" and gpu is None:
            raise ValueError(
                f"{flag_of('server_metrics_interval')} paces the metric scrapes, and "
                "--server-metrics off makes none"
            )
        return self


__all__ = [
    "DEMO_FAULTS",
    "IMAGE_FIELDS",
    "Engine",
    "LoadFault",
    "Mock",
    "Output",
    "Request",
    "ServerMetrics",
    "Source",
    "Validation",
]
