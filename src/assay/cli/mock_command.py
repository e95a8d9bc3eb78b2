"""`assay mock`: serve the mock server in the foreground until Ctrl-C; its help ends with the
table of faults it can inject."""

# Annotations are evaluated here, once, at import (no `from __future__ import annotations`):
# typer reads every flag's annotation at each start, and would otherwise evaluate the strings.

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Final, TypeVar

import typer
from typer._click.core import Context as _ClickContext
from typer._click.formatting import HelpFormatter
from typer.core import TyperCommand

from assay.cli.exit_codes import EXIT_VALID
from assay.cli.guard import exit_guarded
from assay.printable import printable

if TYPE_CHECKING:
    from pydantic import BaseModel

    from assay.mock.capacity import ServerModel
    from assay.mock.config import LatencyModel, ServedModel


class MockCommand(TyperCommand):
    """`assay mock` whose help ends with the fault table, imported only when help is shown."""

    # typer vendors click; its Context and HelpFormatter are the supertype's own types.
    def format_epilog(self, ctx: _ClickContext, formatter: HelpFormatter) -> None:
        from assay.mock import FAULTS

        rows = [
            (name, f"-> {info.code.value}: {info.description}") for name, info in FAULTS.items()
        ]
        with formatter.section("Faults (NAME -> the code the client must report)"):
            formatter.write_dl(rows)


def mock(
    host: Annotated[str, typer.Option(help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on.")] = 8000,
    workers: Annotated[int, typer.Option(help="Server processes sharing the port.")] = 1,
    ttft_ms: Annotated[float, typer.Option(help="Time to first token.")] = 0.0,
    itl_ms: Annotated[float, typer.Option(help="Inter-token latency.")] = 0.0,
    output_tokens: Annotated[int, typer.Option(help="Tokens the model wants to say.")] = 16,
    fault: Annotated[
        list[str] | None,
        typer.Option(
            metavar="NAME=RATE",
            help="Inject a fault at a rate, NAME=RATE (repeatable; faults below).",
        ),
    ] = None,
    fault_after: Annotated[int, typer.Option(help="Tokens before a mid-stream fault.")] = 2,
    seed: Annotated[int, typer.Option(help="Seed of latencies and fault choices.")] = 0,
    model_name: Annotated[str, typer.Option(help="The model /v1/models lists.")] = "assay-mock",
    served_model: Annotated[
        list[str] | None,
        typer.Option(
            metavar="NAME[=TTFT_MS/ITL_MS]",
            help="Serve one more model (or LoRA adapter) beside --model-name, with a latency of "
            "its own (repeatable): NAME=TTFT_MS/ITL_MS sets it; a bare NAME takes the n-th "
            "bare name's spread of --ttft-ms/--itl-ms (TTFT x 1+n/2, ITL x 1+n/4, from n=0).",
        ),
    ] = None,
    metrics_scale: Annotated[
        float,
        typer.Option(help="Report /metrics counters times this (1 = truthfully; for testing)."),
    ] = 1.0,
    record_requests: Annotated[
        Path | None,
        typer.Option(help="Append every request received (path, id, body) to this JSONL file."),
    ] = None,
    max_model_len: Annotated[
        int | None,
        typer.Option(
            metavar="TOKENS",
            help="List the model with this context window (max_model_len, as vLLM does).",
        ),
    ] = None,
    slots: Annotated[
        int | None,
        typer.Option(help="Answer at most this many requests at once; queue the rest (FIFO)."),
    ] = None,
    tokens_per_s: Annotated[
        float | None,
        typer.Option(help="Let out at most this many output tokens per second, all answers."),
    ] = None,
    fault_past: Annotated[
        int | None,
        typer.Option(
            metavar="REQUESTS",
            help="Answer badly (--load-fault) a request that finds more than this many in the "
            "server.",
        ),
    ] = None,
    load_fault: Annotated[
        str, typer.Option(metavar="empty|cut", help="How answers past --fault-past go bad.")
    ] = "empty",
    gpu_watts: Annotated[
        float | None,
        typer.Option(
            metavar="WATTS",
            help="Show a simulated GPU drawing this many watts in /metrics (NVIDIA DCGM's power "
            "gauge and energy counter), for runs that report joules per usable token.",
        ),
    ] = None,
) -> None:
    """Serve an OpenAI-compatible mock LLM with fault injection (per request with the header
    `X-Assay-Fault: NAME; after=N`, or per run with --fault NAME=RATE).
    """

    def body() -> int:
        from assay.cli.options import parse_pairs
        from assay.errors import ConfigError
        from assay.mock import Fixed, LatencyModel, MockConfig, serve
        from assay.mock.capacity import ServerModel
        from assay.spec.sections import Mock

        if fault_past is None and load_fault != "empty":  # said with this command's flags
            raise ConfigError("--load-fault needs --fault-past (the load past which it strikes)")
        # The flags `assay run` has too (`--mock-ttft-ms`, ...) take its ranges, from its section.
        shared = validated(
            Mock,
            {
                "ttft_ms": ttft_ms,
                "itl_ms": itl_ms,
                "slots": slots,
                "tokens_per_s": tokens_per_s,
                "fault_past": fault_past,
                "load_fault": load_fault,
                "gpu_watts": gpu_watts,
            },
        )
        server = ServerModel.of(shared)
        latency = LatencyModel(
            time_to_first_token=Fixed(value=shared.ttft_ms / 1000),
            inter_token_latency=Fixed(value=shared.itl_ms / 1000),
            output_tokens=validated(Fixed, {"value": output_tokens}, {"value": "--output-tokens"}),
        )
        models = served_models_of(tuple(served_model or ()), latency, model_name)
        faults = parse_pairs(fault, "--fault") or {}
        # The rates are checked by the config as a whole (known names, each a probability, a sum
        # of at most 1), so its problems are said of the one flag that gives them.
        validated(MockConfig, {"fault_rates": faults}, prefix="--fault: ")
        config = validated(
            MockConfig,
            {
                "latency": latency,
                "fault_rates": faults,
                "fault_after_tokens": fault_after,
                "seed": seed,
                "model_name": model_name,
                "models": models,
                "metrics_scale": metrics_scale,
                "record_requests": record_requests,
                "max_model_len": max_model_len,
                "server": server,
                "gpu_watts": shared.gpu_watts,
            },
            {"fault_rates": "--fault", "fault_after_tokens": "--fault-after"},
        )
        check_listen_address(host, port, workers)

        def ready(url: str) -> None:
            typer.echo(f"assay mock serving {model_name!r} at {url} (Ctrl-C stops)")
            for line in startup_lines(faults, ttft_ms, itl_ms, output_tokens):
                typer.echo(line)
            if models:
                typer.echo(served_models_line(models))
            if config.server.bounded:
                typer.echo(capacity_line(config.server))
            if gpu_watts is not None:
                typer.echo(
                    f"GPU: one simulated GPU drawing {gpu_watts:g} W in /metrics (DCGM series)"
                )

        serve(config, host=host, port=port, workers=workers, on_ready=ready)
        return EXIT_VALID

    exit_guarded(body)


def startup_lines(
    faults: dict[str, float], ttft_ms: float, itl_ms: float, output_tokens: int
) -> list[str]:
    """What the mock injects and how it answers, said at start-up: its defaults are not the
    embedded mock's of `assay run`.

    >>> startup_lines({}, 0.0, 0.0, 16)[0]
    'faults: none (--fault NAME=RATE injects one; X-Assay-Fault per request)'
    """
    injected = ", ".join(f"{name}={rate:g}" for name, rate in faults.items() if rate > 0)
    return [
        f"faults: {injected or 'none'} (--fault NAME=RATE injects one; X-Assay-Fault per request)",
        f"answers: TTFT {ttft_ms:g} ms, ITL {itl_ms:g} ms, {output_tokens} output tokens (capped "
        "by max_tokens); the embedded mock of `assay run` uses TTFT 40 ms, ITL 8 ms, about 400 "
        "tokens capped by max_tokens (128 by default), and injects 2 % demo faults",
    ]


# A latency past an hour is a typo, not a model (and a sleep the mock would never wake from).
_MOST_MS: Final = 3_600_000.0
# More models than any server lists (vLLM loads some LoRA adapters at once, not thousands).
MOST_SERVED_MODELS: Final = 1000


def served_models_of(
    values: tuple[str, ...], latency: "LatencyModel", model_name: str = "assay-mock"
) -> "tuple[ServedModel, ...]":
    """The models `--served-model` asks for: `NAME=TTFT_MS/ITL_MS` with that latency, a bare
    `NAME` with its spread of `latency` (`spread_models`, in the order the bare names come).
    Anything else, a name given twice or that is `model_name` already, a latency above an hour
    or more than `MOST_SERVED_MODELS` models is a `ConfigError` naming the flag.

    >>> from assay.mock import Fixed, LatencyModel
    >>> base = LatencyModel(time_to_first_token=Fixed(value=0.04))
    >>> [(m.name, m.latency.time_to_first_token.value)
    ...  for m in served_models_of(("a", "b=100/5", "c"), base)]
    [('a', 0.04), ('b', 0.1), ('c', 0.06)]
    """
    from assay.errors import ConfigError
    from assay.mock.config import Fixed, ServedModel, spread_models

    if len(values) > MOST_SERVED_MODELS:
        raise ConfigError(
            f"--served-model is given {len(values)} times: the mock serves at most "
            f"{MOST_SERVED_MODELS} models beside --model-name"
        )
    given: dict[str, ServedModel | None] = {}  # in the order given; None: a bare name
    bare: list[str] = []
    for value in values:
        name, equals, latencies = value.partition("=")
        name = name.strip()
        shown = repr(value)
        if not name:
            raise ConfigError(f"--served-model {shown}: give NAME or NAME=TTFT_MS/ITL_MS")
        if name in given:
            raise ConfigError(f"--served-model {name!r} is given more than once")
        if name == model_name:
            raise ConfigError(
                f"--served-model {name!r} is the --model-name, served already "
                "with --ttft-ms/--itl-ms"
            )
        if not equals:
            given[name] = None
            bare.append(name)
            continue
        ttft, slash, itl = latencies.partition("/")
        try:
            ttft_ms, itl_ms = float(ttft), float(itl)
        except ValueError:
            ttft_ms = itl_ms = -1.0
        if not slash or not (0 <= ttft_ms <= _MOST_MS and 0 <= itl_ms <= _MOST_MS):
            raise ConfigError(
                f"--served-model {shown}: NAME=TTFT_MS/ITL_MS takes two numbers of "
                f"milliseconds from 0 to {_MOST_MS:.0f} (an hour), e.g. lora-a=40/8"
            )
        given[name] = ServedModel(
            name=name,
            latency=latency.model_copy(
                update={
                    "time_to_first_token": Fixed(value=ttft_ms / 1000),
                    "inter_token_latency": Fixed(value=itl_ms / 1000),
                }
            ),
        )
    spread = iter(spread_models(tuple(bare), latency))
    return tuple(next(spread) if model is None else model for model in given.values())


def served_models_line(models: "tuple[ServedModel, ...]") -> str:
    """The models served beside --model-name, said at start-up.

    >>> from assay.mock import Fixed, LatencyModel
    >>> served_models_line(served_models_of(("a=40/8",), LatencyModel()))
    'also serves: a (TTFT 40 ms, ITL 8 ms)'
    """
    from assay.mock.config import Fixed

    def ms(distribution: object) -> str:
        return f"{distribution.value * 1000:g} ms" if isinstance(distribution, Fixed) else "drawn"

    described = ", ".join(
        f"{printable(model.name)} (TTFT {ms(model.latency.time_to_first_token)}, "
        f"ITL {ms(model.latency.inter_token_latency)})"
        for model in models
    )
    return f"also serves: {described}"


Model = TypeVar("Model", bound="BaseModel")


def validated(
    model: type[Model],
    values: dict[str, object],
    flags: Mapping[str, str] | None = None,
    prefix: str = "",
) -> Model:
    """`values` as `model`, the `assay mock` flags giving them; a problem is a `ConfigError`
    naming the flag as `assay run` names its own: a key by `flags`, else `--key-with-dashes`.

    >>> from assay.spec.sections import Mock
    >>> validated(Mock, {"ttft_ms": -5})
    Traceback (most recent call last):
    ...
    assay.errors.ConfigError: --ttft-ms: Input should be greater than or equal to 0
    """
    from pydantic import ValidationError

    from assay.config import describe_validation_error
    from assay.errors import ConfigError

    try:
        return model.model_validate(values)
    except ValidationError as error:
        names = {key: f"--{key.replace('_', '-')}" for key in values} | dict(flags or {})
        raise ConfigError(prefix + describe_validation_error(error, names)) from None


def capacity_line(server: "ServerModel") -> str:
    """The finite server said at start-up.

    >>> from assay.mock.capacity import ServerModel
    >>> capacity_line(ServerModel(slots=40, fault_past=20))
    'capacity: 40 slots (queue beyond), no token budget, empty answers past 20 in the server'
    """
    slots = f"{server.slots} slots (queue beyond)" if server.slots else "unlimited slots"
    budget = (
        f"{server.tokens_per_s:g} output tokens/s"
        if server.tokens_per_s is not None
        else "no token budget"
    )
    faults = (
        f"{server.fault} answers past {server.fault_past} in the server"
        if server.fault_past is not None
        else "no load faults"
    )
    return f"capacity: {slots}, {budget}, {faults}"


def check_listen_address(host: str, port: int, workers: int) -> None:
    """Refuse a port out of range, too many workers, or an address this machine cannot listen
    on (not one of its own, or a port already taken) with one `ConfigError` line."""
    import socket

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
