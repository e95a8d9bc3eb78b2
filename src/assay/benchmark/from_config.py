"""Turning a flat `RunConfig` into the scheduler's plan, the data source and backend settings."""

from __future__ import annotations

import os
from typing import Any, Final

from pydantic import SecretStr, ValidationError

from assay.backend import BackendSettings, Timeouts
from assay.backend.trace_context import TraceContext
from assay.benchmark.chain_spec import ChainSpec
from assay.config import RunConfig, describe_validation_error
from assay.config.limits import load_processes
from assay.data import (
    FileSource,
    FileSourceConfig,
    PromptColumns,
    RequestSource,
    SyntheticSource,
    parse_token_count,
)
from assay.data.media import ImageSize
from assay.data.session import FileSessions, SyntheticSessions
from assay.data.source_config import build_source
from assay.data.trace import TraceConfig, load_trace
from assay.engine import BenchmarkPlan, Constraints
from assay.errors import ConfigError, DataError
from assay.metrics import Slo
from assay.spec.load import (
    DEFAULT_CONCURRENCY,
    Concurrent,
    Constant,
    Poisson,
    Profile,
    RampUp,
    RateRamp,
    Replay,
    Sweep,
    Synchronous,
    Throughput,
)

DEFAULT_API_KEY_ENV: Final = "OPENAI_API_KEY"
DEFAULT_MAX_SECONDS: Final = 10.0


def profile_of(config: RunConfig) -> Profile:
    """The load profile the flags describe (the config already checked its parameters).

    >>> profile_of(RunConfig(profile="constant", rate=5))
    Constant(kind='constant', rate=5.0, burstiness=None)
    """
    concurrency = config.concurrency or DEFAULT_CONCURRENCY
    match config.profile:
        case "synchronous":
            return Synchronous()
        case "concurrent":
            return Concurrent(streams=concurrency)
        case "throughput":
            return Throughput(max_concurrency=concurrency)
        case "constant":
            return Constant(rate=config.rate or 1.0, burstiness=config.burstiness)
        case "poisson":
            return Poisson(rate=config.rate or 1.0, seed=config.seed, burstiness=config.burstiness)
        case "ramp_up":
            return RampUp(ramp=ramp_of(config), burstiness=config.burstiness, seed=config.seed)
        case "sweep":
            return Sweep(
                rates=config.sweep_rates,
                max_concurrency=concurrency,
                concurrencies=config.sweep_concurrency,
            )
        case "replay":
            return Replay(speed=config.replay_speed)


def ramp_of(config: RunConfig) -> RateRamp:
    """The ramp of `--ramp-up`: over `--max-seconds` when given, else over the time the curve
    takes to offer `--max-requests` (its integral reaches them at its end).

    >>> ramp_of(RunConfig(ramp_up="linear", ramp_up_start_rate=1, ramp_up_end_rate=9,
    ...                   max_requests=50)).duration_s
    10.0
    """
    curve, start, end = config.ramp_up, config.ramp_up_start_rate, config.ramp_up_end_rate
    if curve is None or start is None or end is None:
        raise ConfigError("--ramp-up needs --ramp-up-start-rate and --ramp-up-end-rate")
    if config.max_seconds is not None:
        return RateRamp(curve=curve, start_rate=start, end_rate=end, duration_s=config.max_seconds)
    if config.max_requests is not None:
        return RateRamp.offering(curve, start, end, config.max_requests)
    raise ConfigError("--ramp-up needs --max-seconds or --max-requests (the step's length)")


def constraints_of(config: RunConfig) -> Constraints:
    """The per-step constraints; an unbounded synthetic run gets a default time limit.

    >>> constraints_of(RunConfig()).max_seconds
    10.0
    """
    max_seconds = config.max_seconds
    if max_seconds is None and not config.bounded and config.data is None:
        max_seconds = DEFAULT_MAX_SECONDS
    return Constraints(
        max_requests=config.max_requests,
        max_seconds=max_seconds,
        max_errors=config.max_errors,
        stop_error_rate=config.stop_error_rate,
        warmup_seconds=config.warmup_seconds,
        cooldown_seconds=config.cooldown_seconds,
    )


def backend_settings_of(config: RunConfig, base_url: str) -> BackendSettings:
    """Where and how to connect; the API key is read from the named environment variable.

    A variable named with `--api-key-env` must be set and not empty (a run that silently goes
    without its key would only show 401s); the default `OPENAI_API_KEY` is used when set.
    """
    name = config.api_key_env or DEFAULT_API_KEY_ENV
    key = os.environ.get(name)
    if config.api_key_env is not None and not key:
        state = "is empty" if key is not None else "is not set"
        raise ConfigError(f"--api-key-env {name}: the environment variable {state}")
    id_header = config.request_id_header
    try:
        return BackendSettings(
            base_url=base_url,
            api_key=SecretStr(key) if key else None,
            headers=config.headers,
            secret_headers=config.secret_headers,
            request_id_header=None if id_header.lower() == "none" else id_header,
            verify_tls=not config.insecure,
            ca_bundle=config.ca_bundle,
            continuous_usage_stats=config.continuous_usage_stats,
            timeouts=Timeouts(
                connect_s=config.timeout_connect,
                first_token_s=config.timeout_first_token,
                idle_s=config.timeout_idle,
                total_s=config.timeout_total,
            ),
            max_response_bytes=config.max_response_bytes,
            trace_context=(
                TraceContext(seed=config.seed, sample=config.trace_sample)
                if config.trace_context
                else None
            ),
        )
    except ValidationError as error:
        # One line per problem and never the input values, which may hold credentials.
        raise ConfigError(describe_validation_error(error)) from None


def source_of(config: RunConfig, model: str) -> RequestSource:
    """Synthetic prompts or sessions, the data of `--data` (read and checked here, as sessions
    with `--multi-turn`), or the trace of `--trace`."""
    think_time_ns = round(config.think_time_ms * 1_000_000)
    match source_config_of(config, model):
        case TraceConfig() as trace:
            return load_trace(trace)
        case FileSourceConfig() as file_config:
            rows = FileSource.load(file_config)
            if config.data_cycle:
                rows = rows.cycled()
            return FileSessions.of(rows, think_time_ns) if config.multi_turn else rows
        case SyntheticSource() as synthetic:
            if config.turns > 1:
                return SyntheticSessions(synthetic, config.turns, think_time_ns)
            return build_source(synthetic)


def source_config_of(
    config: RunConfig, model: str
) -> SyntheticSource | FileSourceConfig | TraceConfig:
    """What `source_of` builds, not built yet: checking it costs no file read."""
    output_tokens = parse_token_count(config.output_tokens)
    if config.trace is not None:
        return TraceConfig(
            path=config.trace,
            endpoint=config.endpoint,
            model=model,
            block_tokens=config.trace_block_tokens,
            ignore_eos=config.ignore_eos,
            stream=config.stream,
            seed=config.seed,
            tokenizer=config.tokenizer,
            extra_body=config.request_fields(),
        )
    if config.data is not None:
        return FileSourceConfig(
            path=config.data,
            columns=PromptColumns.model_validate(config.data_columns),
            endpoint=config.endpoint,
            model=model,
            output_tokens=output_tokens,
            ignore_eos=config.ignore_eos,
            stream=config.stream,
            seed=config.seed,
            tokenizer=config.tokenizer,
            extra_body=config.request_fields(),
        )
    return SyntheticSource(
        endpoint=config.endpoint,
        model=model,
        **media_of(config),
        prompt_tokens=parse_token_count(config.prompt_tokens),
        output_tokens=output_tokens,
        documents=config.documents,
        document_tokens=parse_token_count(config.document_tokens),
        shared_prefix_tokens=config.shared_prefix_tokens,
        ignore_eos=config.ignore_eos,
        stream=config.stream,
        seed=config.seed,
        tokenizer=config.tokenizer,
        extra_body=config.request_fields(),
    )


def media_of(config: RunConfig) -> dict[str, Any]:
    """The synthetic images and audio the flags ask for, as `SyntheticSource` fields.

    >>> media_of(RunConfig(images="2", image_size="64x32"))["image_size"]
    ImageSize(width=64, height=32)
    """
    try:
        images = parse_token_count(config.images)
    except DataError as error:
        raise ConfigError(f"--images {config.images}: {error}") from None
    try:
        size = ImageSize.parse(config.image_size)
    except ValueError as error:
        raise ConfigError(f"--image-size: {error}") from None
    return {
        "images": images,
        "image_size": size,
        "image_format": config.image_format,
        "audio_seconds": config.audio_seconds,
    }


def chain_of(config: RunConfig) -> ChainSpec:
    """The validator chain the flags describe."""
    return ChainSpec(
        endpoint=config.endpoint,
        strict=config.strict,
        extra=config.validators,
        use_defaults=config.default_validators,
        allow_missing_done=config.allow_missing_done,
    )


def slo_of(config: RunConfig) -> Slo | None:
    """The goodput SLO, when any limit was given."""
    return Slo.model_validate(config.slo) if config.slo else None


def plan_of(
    config: RunConfig,
    source: RequestSource,
    backend: BackendSettings,
    chain: ChainSpec,
    *,
    slices: int | None = None,
) -> BenchmarkPlan:
    """The scheduler's plan; the validator chain is rebuilt from names in every process.

    `slices` is how many slices the load is cut into when the engine says (its Ray actors);
    otherwise one per load process."""
    return BenchmarkPlan(
        profile=profile_of(config),
        constraints=constraints_of(config),
        processes=slices or load_processes(config),
        source=source,
        backend=backend,
        validator_factory=chain,
        seed=config.seed,
    )
