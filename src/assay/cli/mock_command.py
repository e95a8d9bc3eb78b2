"""`assay mock`: serve the mock server in the foreground until Ctrl-C."""

from __future__ import annotations

import socket
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
    metrics_scale: float = 1.0,
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
            metrics_scale=metrics_scale,
            record_requests=record_requests,
        )
    except ValidationError as error:
        raise ConfigError(describe_validation_error(error)) from None
    check_listen_address(host, port, workers)
    serve(
        config,
        host=host,
        port=port,
        workers=workers,
        on_ready=lambda url: typer.echo(
            f"assay mock serving {model_name!r} at {url} (Ctrl-C stops)"
        ),
    )


def check_listen_address(host: str, port: int, workers: int) -> None:
    """Refuse a port out of range, too many workers, or an address this machine cannot listen
    on (not one of its own, or a port already taken) with one `ConfigError` line."""
    from assay.config import PROCESSES_PER_CPU, usable_cpus
    from assay.errors import ConfigError

    if not 0 <= port <= 65535:
        raise ConfigError(f"--port {port}: a port is a number from 0 (any free port) to 65535")
    most = PROCESSES_PER_CPU * usable_cpus()
    if not 1 <= workers <= most:
        raise ConfigError(f"--workers {workers}: from 1 to {most} on this machine")
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
        family, kind, proto, _, address = infos[0]
        # The same options the server sets: a port left in TIME_WAIT is not "in use".
        with socket.socket(family, kind, proto) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            probe.bind(address)
    except OSError as error:
        raise ConfigError(
            f"cannot listen on {host} port {port}: {error.strerror or error}"
        ) from None
