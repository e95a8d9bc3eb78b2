"""`assay mock`: serve the mock server in the foreground until Ctrl-C."""

from __future__ import annotations

from pathlib import Path

import typer

from assay.mock import Fixed, LatencyModel, MockConfig, serve


def serve_mock(
    *,
    host: str,
    port: int,
    workers: int,
    ttft_ms: float,
    itl_ms: float,
    output_tokens: int,
    faults: dict[str, float],
    fault_after: int,
    seed: int,
    model_name: str,
    record_requests: Path | None = None,
) -> None:
    """Build the mock's config from the flags and serve until interrupted."""
    from pydantic import ValidationError

    from assay.config import describe_validation_error
    from assay.errors import ConfigError

    try:
        config = MockConfig(
            latency=LatencyModel(
                time_to_first_token=Fixed(value=ttft_ms / 1000),
                inter_token_latency=Fixed(value=itl_ms / 1000),
                output_tokens=Fixed(value=output_tokens),
            ),
            fault_rates=faults,
            fault_after_tokens=fault_after,
            seed=seed,
            model_name=model_name,
            record_requests=record_requests,
        )
    except ValidationError as error:
        raise ConfigError(describe_validation_error(error)) from None
    serve(
        config,
        host=host,
        port=port,
        workers=workers,
        on_ready=lambda url: typer.echo(
            f"assay mock serving {model_name!r} at {url} (Ctrl-C stops)"
        ),
    )
