"""What report.json keeps under `run_config`: the run's settings as the run used them, flat,
under the keys of the `assay run` flags (`assay.spec.flat`), read leniently and written back as
they were read."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, Literal, Self

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
    model_serializer,
    model_validator,
)

from assay.spec.capacity import CapacityAxis
from assay.spec.constraints import Constraints
from assay.spec.endpoint import Endpoint
from assay.spec.limits import ECHOED_FIELD_BYTES, MAX_DURATION_S, MAX_TOKENS_PER_REQUEST, MAX_TURNS
from assay.spec.load import ProfileKind, RampCurve
from assay.spec.target import SendableHeaders, mask_headers, mask_url
from assay.spec.validation import DEFAULT_MAX_ERROR_RATE, DEFAULT_MAX_NOT_SENT_RATE


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


class RunEcho(_AsWritten):
    """The run's settings as report.json keeps them (`run_config`): what the run used.

    Beside the settings (with `concurrency`, `mock_faults` and `processes` the effective ones):
    the target and model it resolved, the validator chain, the constraints in force, and
    whether it was interrupted or degraded; `revalidated_at` when `assay revalidate` wrote it.
    `echo["key"]` gives the JSON value under a key, for code written when this was a dict.
    """

    # The settings, under their flat keys (in `FLAT_KEYS` order: the order they are written).
    target: str | None = None
    endpoint: Endpoint = Endpoint.chat
    model: str | None = None
    api_key_env: str | None = None
    headers: SendableHeaders = {}
    secret_headers: tuple[str, ...] = ()
    request_id_header: str = "X-Request-Id"
    trace_context: bool = False
    trace_sample: float = Field(default=1.0, ge=0, le=1, allow_inf_nan=False)
    insecure: bool = False
    ca_bundle: Path | None = None
    wait_ready: float = Field(default=0.0, ge=0, allow_inf_nan=False)
    probe: bool = True
    context_window: int | None = Field(default=None, ge=0)
    profile: ProfileKind = "throughput"
    rate: float | None = Field(default=None, gt=0, allow_inf_nan=False)
    concurrency: int | None = Field(default=None, gt=0)
    sweep_rates: int = Field(default=5, gt=0)
    sweep_concurrency: tuple[int, ...] = ()
    burstiness: float | None = Field(default=None, gt=0, allow_inf_nan=False)
    ramp_up: RampCurve | None = None
    ramp_up_start_rate: float | None = Field(default=None, gt=0, allow_inf_nan=False)
    ramp_up_end_rate: float | None = Field(default=None, gt=0, allow_inf_nan=False)
    trace: Path | None = None
    replay_speed: float = Field(default=1.0, gt=0)
    capacity_slos: tuple[str, ...] = ()
    capacity_axis: CapacityAxis = "rate"
    capacity_arrivals: str = "constant"
    capacity_start: float | None = None
    capacity_growth: float = 2.0
    capacity_precision: float = 0.05
    capacity_confidence: float = 0.95
    capacity_max_lengthening: int = 4
    capacity_step_s: float = 10.0
    capacity_budget_s: float | None = None
    trace_block_tokens: int = Field(default=512, gt=0, le=MAX_TOKENS_PER_REQUEST)
    processes: int | None = Field(default=None, gt=0)
    engine: Literal["local", "ray"] = "local"
    ray_address: str | None = None
    ray_workers: int | None = Field(default=None, gt=0)
    max_seconds: float | None = Field(default=None, gt=0, allow_inf_nan=False, le=MAX_DURATION_S)
    max_requests: int | None = Field(default=None, gt=0)
    max_errors: int | None = Field(default=None, gt=0)
    stop_error_rate: float | None = Field(default=None, gt=0, le=1, allow_inf_nan=False)
    warmup_seconds: float = Field(default=0.0, ge=0, allow_inf_nan=False, le=MAX_DURATION_S)
    cooldown_seconds: float = Field(default=0.0, ge=0, allow_inf_nan=False, le=MAX_DURATION_S)
    data: Path | None = None
    data_columns: dict[str, str] = {}
    data_cycle: bool = False
    multi_turn: bool = False
    turns: int = Field(default=1, ge=1, le=MAX_TURNS)
    think_time_ms: float = Field(default=0.0, ge=0)
    prompt_tokens: str = "256"
    output_tokens: str = "128"
    documents: int = Field(default=8, ge=1, le=100_000)
    document_tokens: str = "128"
    shared_prefix_tokens: int = Field(default=0, ge=0)
    images: str = "0"
    image_size: str = "512x512"
    image_format: Literal["png", "jpeg"] = "png"
    audio_seconds: float = Field(default=0.0, ge=0, le=3600, allow_inf_nan=False)
    tokenizer: str | None = None
    stream: bool = True
    ignore_eos: bool = False
    continuous_usage_stats: bool = False
    seed: int = 42
    temperature: float | None = Field(default=None, ge=0)
    top_p: float | None = Field(default=None, gt=0, le=1)
    stop: tuple[str, ...] = ()
    request_seed: int | None = None
    extra_body: dict[str, JsonValue] = {}
    validators: tuple[str, ...] = ()
    default_validators: bool = True
    strict: bool = False
    allow_missing_done: bool = False
    max_error_rate: float = Field(default=DEFAULT_MAX_ERROR_RATE, ge=0, le=1, allow_inf_nan=False)
    max_not_sent_rate: float = Field(
        default=DEFAULT_MAX_NOT_SENT_RATE, ge=0, le=1, allow_inf_nan=False
    )
    slo: dict[str, float] = {}
    timeout_connect: float = Field(default=10.0, gt=0, allow_inf_nan=False, le=MAX_DURATION_S)
    timeout_first_token: float = Field(default=60.0, gt=0, allow_inf_nan=False, le=MAX_DURATION_S)
    timeout_idle: float = Field(default=30.0, gt=0, allow_inf_nan=False, le=MAX_DURATION_S)
    timeout_total: float = Field(default=600.0, gt=0, allow_inf_nan=False, le=MAX_DURATION_S)
    max_response_bytes: int = Field(default=64 * 1024 * 1024, gt=0)
    output_dir: Path | None = None
    mock_workers: int = Field(default=1, gt=0)
    mock_ttft_ms: float = Field(default=40.0, ge=0, allow_inf_nan=False, le=MAX_DURATION_S * 1000)
    mock_itl_ms: float = Field(default=8.0, ge=0, allow_inf_nan=False, le=MAX_DURATION_S * 1000)
    mock_faults: dict[str, float] = {}
    mock_record_requests: Path | None = None
    mock_slots: int | None = None
    mock_tokens_per_s: float | None = None
    mock_fault_past: int | None = None
    mock_load_fault: str = "empty"
    server_metrics: str | None = None
    server_metrics_interval: float = Field(default=1.0, gt=0, le=3600)
    # What the run used beyond its settings.
    resolved_target: str | None = None
    resolved_model: str | None = None
    validator_chain: str | None = None
    constraints: EchoedConstraints | None = None
    interrupted: bool = False
    degraded: bool = False
    revalidated_at: str | None = None

    @field_serializer("headers")
    def _mask_secret_headers(self, value: dict[str, str]) -> dict[str, str]:
        return mask_headers(value, self.secret_headers)

    @field_serializer("target")
    def _mask_url_password(self, value: str | None) -> str | None:
        return None if value is None else mask_url(value)

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


__all__ = ["EchoedConstraints", "RunEcho", "echoed_fields"]
