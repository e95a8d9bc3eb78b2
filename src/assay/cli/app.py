"""The `assay` command line: `run`, `mock`, `validators`, `revalidate`.

Heavy modules are imported inside the commands so `assay --help` stays fast. Every error meant
for the user (`AssayError`) is one line on stderr and exit code 2; Ctrl-C is exit code 130.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer
from typer._click.core import Context as _ClickContext
from typer._click.formatting import HelpFormatter
from typer.core import TyperCommand

from assay import __version__
from assay.errors import AssayError

EXIT_VALID = 0
EXIT_INVALID = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130

app = typer.Typer(
    name="assay",
    help="Benchmark OpenAI-compatible LLM servers, counting only what was really served.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)

_TARGET = "Target"
_LOAD = "Load"
_LIMITS = "Constraints"
_DATA = "Data"
_FIELDS = "Request fields"
_VALID = "Validation"
_NET = "Transport"
_OUT = "Output"
_MOCK = "Embedded mock (when no --target)"


def _version(value: bool) -> None:
    if value:
        typer.echo(f"assay {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option("--version", callback=_version, is_eager=True, help="Print the version."),
    ] = False,
) -> None:
    """Benchmark OpenAI-compatible LLM servers, counting only what was really served."""


@app.command()
def run(
    target: Annotated[
        str | None,
        typer.Option(
            help="Server base URL; without it an embedded mock server is started.",
            rich_help_panel=_TARGET,
        ),
    ] = None,
    endpoint: Annotated[
        str | None,
        typer.Option(
            help="completions | chat | responses | embeddings [chat]", rich_help_panel=_TARGET
        ),
    ] = None,
    model: Annotated[
        str | None,
        typer.Option(
            help="Model name; default: the first one /v1/models lists.", rich_help_panel=_TARGET
        ),
    ] = None,
    api_key_env: Annotated[
        str | None,
        typer.Option(
            help="Environment variable holding the API key [OPENAI_API_KEY].",
            rich_help_panel=_TARGET,
        ),
    ] = None,
    header: Annotated[
        list[str] | None,
        typer.Option(
            metavar="'NAME: VALUE'",
            help="Extra request header 'Name: value' (repeatable).",
            rich_help_panel=_TARGET,
        ),
    ] = None,
    insecure: Annotated[
        bool | None,
        typer.Option("--insecure", help="Do not verify TLS certificates.", rich_help_panel=_TARGET),
    ] = None,
    profile: Annotated[
        str | None,
        typer.Option(
            help="synchronous | concurrent | throughput | constant | poisson | sweep | replay "
            "[throughput]",
            rich_help_panel=_LOAD,
        ),
    ] = None,
    rate: Annotated[
        float | None,
        typer.Option(help="Requests/s for constant and poisson.", rich_help_panel=_LOAD),
    ] = None,
    concurrency: Annotated[
        int | None,
        typer.Option(
            help="Streams for concurrent; the cap for throughput and sweep [64].",
            rich_help_panel=_LOAD,
        ),
    ] = None,
    sweep_rates: Annotated[
        int | None,
        typer.Option(help="Constant-rate steps of a sweep [5].", rich_help_panel=_LOAD),
    ] = None,
    trace: Annotated[
        Path | None,
        typer.Option(
            help="A timestamped JSONL trace for --profile replay (Mooncake or prompt rows).",
            rich_help_panel=_LOAD,
        ),
    ] = None,
    replay_speed: Annotated[
        float | None,
        typer.Option(help="Replay N times as fast as the trace [1].", rich_help_panel=_LOAD),
    ] = None,
    trace_block_tokens: Annotated[
        int | None,
        typer.Option(
            help="Tokens per Mooncake hash block [512, as Mooncake].", rich_help_panel=_LOAD
        ),
    ] = None,
    processes: Annotated[
        int | None,
        typer.Option(help="Load-generating processes [CPU count].", rich_help_panel=_LOAD),
    ] = None,
    max_seconds: Annotated[
        float | None,
        typer.Option(
            help="Stop each step after this long [10 when nothing else bounds it].",
            rich_help_panel=_LIMITS,
        ),
    ] = None,
    max_requests: Annotated[
        int | None,
        typer.Option(help="Stop each step after this many requests.", rich_help_panel=_LIMITS),
    ] = None,
    max_errors: Annotated[
        int | None,
        typer.Option(help="Stop a step after this many errored requests.", rich_help_panel=_LIMITS),
    ] = None,
    stop_error_rate: Annotated[
        float | None,
        typer.Option(
            help="Stop a step when the windowed error rate passes this fraction.",
            rich_help_panel=_LIMITS,
        ),
    ] = None,
    warmup_seconds: Annotated[
        float | None,
        typer.Option(
            help="Requests starting this early in a step are not measured.", rich_help_panel=_LIMITS
        ),
    ] = None,
    cooldown_seconds: Annotated[
        float | None,
        typer.Option(
            help="Requests starting this late in a step are not measured.", rich_help_panel=_LIMITS
        ),
    ] = None,
    data: Annotated[
        Path | None,
        typer.Option(
            help="Prompt data: a JSONL, CSV, JSON (ShareGPT), parquet or arrow file, or "
            "hf:NAME_OR_PATH[:SPLIT]; default: synthetic prompts.",
            rich_help_panel=_DATA,
        ),
    ] = None,
    data_column: Annotated[
        list[str] | None,
        typer.Option(
            metavar="ROLE=COLUMN",
            help="The column holding a role: prompt, messages, output_tokens, conversations, "
            "turns or extra_body (repeatable).",
            rich_help_panel=_DATA,
        ),
    ] = None,
    multi_turn: Annotated[
        bool | None,
        typer.Option(
            "--multi-turn",
            help="Run each conversation of --data (ShareGPT, or a `turns` list) as a session: "
            "turn k+1 carries the answers really received.",
            rich_help_panel=_DATA,
        ),
    ] = None,
    turns: Annotated[
        int | None,
        typer.Option(
            help="Synthetic sessions of this many turns of --prompt-tokens each [1].",
            rich_help_panel=_DATA,
        ),
    ] = None,
    think_time_ms: Annotated[
        float | None,
        typer.Option(help="Pause between a session's turns [0].", rich_help_panel=_DATA),
    ] = None,
    prompt_tokens: Annotated[
        str | None,
        typer.Option(
            help="Synthetic prompt tokens: N, normal:MEAN,STDEV,MIN,MAX or uniform:MIN,MAX [256].",
            rich_help_panel=_DATA,
        ),
    ] = None,
    output_tokens: Annotated[
        str | None,
        typer.Option(help="Output tokens asked for, same forms [128].", rich_help_panel=_DATA),
    ] = None,
    shared_prefix_tokens: Annotated[
        int | None,
        typer.Option(
            help="A prefix shared by every synthetic prompt (prefix caching).",
            rich_help_panel=_DATA,
        ),
    ] = None,
    tokenizer: Annotated[
        str | None,
        typer.Option(
            help="A local tokenizer.json (file or directory); default: built-in.",
            rich_help_panel=_DATA,
        ),
    ] = None,
    stream: Annotated[
        bool | None,
        typer.Option(
            "--stream/--no-stream", help="Stream the answers [stream].", rich_help_panel=_DATA
        ),
    ] = None,
    ignore_eos: Annotated[
        bool | None,
        typer.Option(
            "--ignore-eos",
            help="Ask for exactly the output tokens (vLLM, SGLang).",
            rich_help_panel=_DATA,
        ),
    ] = None,
    seed: Annotated[
        int | None, typer.Option(help="Seed for data and arrivals [42].", rich_help_panel=_DATA)
    ] = None,
    temperature: Annotated[
        float | None, typer.Option(help="Sampling temperature.", rich_help_panel=_FIELDS)
    ] = None,
    top_p: Annotated[
        float | None, typer.Option(help="Nucleus sampling top_p.", rich_help_panel=_FIELDS)
    ] = None,
    stop: Annotated[
        list[str] | None,
        typer.Option(metavar="TEXT", help="A stop sequence (repeatable).", rich_help_panel=_FIELDS),
    ] = None,
    request_seed: Annotated[
        int | None,
        typer.Option(
            help="The `seed` field of every request (--seed seeds assay's own data).",
            rich_help_panel=_FIELDS,
        ),
    ] = None,
    extra_body: Annotated[
        list[str] | None,
        typer.Option(
            metavar="JSON",
            help="A JSON object merged into every request body, last (repeatable; merged left "
            'to right), e.g. \'{"response_format": {"type": "json_object"}}\'.',
            rich_help_panel=_FIELDS,
        ),
    ] = None,
    validator: Annotated[
        list[str] | None,
        typer.Option(
            metavar="NAME|MODULE:ATTR",
            help="Add a validator: a built-in name or package.module:name "
            "(repeatable; see `assay validators`).",
            rich_help_panel=_VALID,
        ),
    ] = None,
    no_default_validators: Annotated[
        bool | None,
        typer.Option(
            "--no-default-validators",
            help="Use only the --validator ones, not the endpoint's default chain.",
            rich_help_panel=_VALID,
        ),
    ] = None,
    strict: Annotated[
        bool | None,
        typer.Option(
            "--strict",
            help="Strict chain: finish_reason required, two-sided usage.",
            rich_help_panel=_VALID,
        ),
    ] = None,
    slo: Annotated[
        list[str] | None,
        typer.Option(
            metavar="KEY=MS",
            help="Goodput SLO, e.g. ttft_ms=500 (ttft_ms, tpot_ms, itl_ms, e2e_ms).",
            rich_help_panel=_VALID,
        ),
    ] = None,
    max_error_rate: Annotated[
        float | None,
        typer.Option(
            help="A run above this error rate is INVALID (exit 1) [0.05].", rich_help_panel=_VALID
        ),
    ] = None,
    timeout_connect: Annotated[
        float | None, typer.Option(help="Seconds [10].", rich_help_panel=_NET)
    ] = None,
    timeout_first_token: Annotated[
        float | None, typer.Option(help="Seconds [60].", rich_help_panel=_NET)
    ] = None,
    timeout_idle: Annotated[
        float | None, typer.Option(help="Seconds between bytes [30].", rich_help_panel=_NET)
    ] = None,
    timeout_total: Annotated[
        float | None, typer.Option(help="Seconds [600].", rich_help_panel=_NET)
    ] = None,
    output_dir: Annotated[
        Path | None,
        typer.Option(
            help="Where report.json, records.jsonl and summary.csv go [assay-results/run-<time>].",
            rich_help_panel=_OUT,
        ),
    ] = None,
    config: Annotated[
        Path | None,
        typer.Option(
            help="A TOML or JSON file whose keys mirror these flags; flags win.",
            rich_help_panel=_OUT,
        ),
    ] = None,
    mock_workers: Annotated[
        int | None, typer.Option(help="Mock server processes [1].", rich_help_panel=_MOCK)
    ] = None,
    mock_ttft_ms: Annotated[
        float | None, typer.Option(help="Mock time to first token [40].", rich_help_panel=_MOCK)
    ] = None,
    mock_itl_ms: Annotated[
        float | None, typer.Option(help="Mock inter-token latency [8].", rich_help_panel=_MOCK)
    ] = None,
    mock_fault: Annotated[
        list[str] | None,
        typer.Option(
            metavar="NAME=RATE",
            help="Inject a fault at a rate, e.g. empty_stream=0.02 (see `assay mock --help`).",
            rich_help_panel=_MOCK,
        ),
    ] = None,
    mock_record_requests: Annotated[
        Path | None,
        typer.Option(
            help="Append every request the mock receives to this JSONL file.",
            rich_help_panel=_MOCK,
        ),
    ] = None,
) -> None:
    """Run a benchmark and write report.json, records.jsonl and summary.csv.

    Exit code 0: a valid run; 1: an INVALID run (error rate above --max-error-rate, or nothing
    completed); 2: bad usage or input; 130: interrupted (the partial report is still written).
    """
    from assay.cli.options import parse_headers, parse_json_objects, parse_mapping, parse_pairs
    from assay.config import build_config, load_config_file

    def body() -> int:
        overrides: dict[str, Any] = {
            "target": target, "endpoint": endpoint, "model": model, "api_key_env": api_key_env,
            "headers": parse_headers(header), "insecure": insecure, "profile": profile,
            "rate": rate, "concurrency": concurrency, "sweep_rates": sweep_rates,
            "trace": trace, "replay_speed": replay_speed,
            "trace_block_tokens": trace_block_tokens,
            "processes": processes, "max_seconds": max_seconds, "max_requests": max_requests,
            "max_errors": max_errors, "stop_error_rate": stop_error_rate,
            "warmup_seconds": warmup_seconds, "cooldown_seconds": cooldown_seconds,
            "data": data, "data_columns": parse_mapping(data_column, "--data-column"),
            "multi_turn": multi_turn, "turns": turns, "think_time_ms": think_time_ms,
            "prompt_tokens": prompt_tokens, "output_tokens": output_tokens,
            "shared_prefix_tokens": shared_prefix_tokens, "tokenizer": tokenizer,
            "stream": stream, "ignore_eos": ignore_eos, "seed": seed,
            "temperature": temperature, "top_p": top_p,
            "stop": tuple(stop) if stop else None, "request_seed": request_seed,
            "extra_body": parse_json_objects(extra_body, "--extra-body"),
            "validators": tuple(validator) if validator else None,
            "default_validators": False if no_default_validators else None,
            "strict": strict, "slo": parse_pairs(slo, "--slo"),
            "max_error_rate": max_error_rate, "timeout_connect": timeout_connect,
            "timeout_first_token": timeout_first_token, "timeout_idle": timeout_idle,
            "timeout_total": timeout_total, "output_dir": output_dir,
            "mock_workers": mock_workers, "mock_ttft_ms": mock_ttft_ms,
            "mock_itl_ms": mock_itl_ms, "mock_faults": parse_pairs(mock_fault, "--mock-fault"),
            "mock_record_requests": mock_record_requests,
        }  # fmt: skip
        file_keys = load_config_file(config) if config is not None else {}
        run_config = build_config(file_keys, overrides)
        from assay.launch import start_load_processes

        # The load processes import the run path while this process does the same.
        with start_load_processes(run_config.load_processes) as started:
            from assay.cli.run_command import run_and_report

            return run_and_report(run_config, started)

    _exit(_guarded(body))


class _MockCommand(TyperCommand):
    """`assay mock` whose help ends with the fault table, imported only when help is shown."""

    # typer vendors click; its Context and HelpFormatter are the supertype's own types.
    def format_epilog(self, ctx: _ClickContext, formatter: HelpFormatter) -> None:
        from assay.mock import FAULTS

        rows = [
            (name, f"-> {info.code.value}: {info.description}") for name, info in FAULTS.items()
        ]
        with formatter.section("Faults (NAME -> the code the client must report)"):
            formatter.write_dl(rows)


@app.command(cls=_MockCommand)
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
    record_requests: Annotated[
        Path | None,
        typer.Option(help="Append every request received (path, id, body) to this JSONL file."),
    ] = None,
) -> None:
    """Serve an OpenAI-compatible mock LLM with fault injection (per request with the header
    `X-Assay-Fault: NAME; after=N`, or per run with --fault NAME=RATE).
    """
    from assay.cli.mock_command import serve_mock
    from assay.cli.options import parse_pairs

    def body() -> int:
        serve_mock(
            host=host, port=port, workers=workers, ttft_ms=ttft_ms, itl_ms=itl_ms,
            output_tokens=output_tokens, faults=parse_pairs(fault, "--fault") or {},
            fault_after=fault_after, seed=seed, model_name=model_name,
            record_requests=record_requests,
        )  # fmt: skip
        return EXIT_VALID

    _exit(_guarded(body))


@app.command()
def validators() -> None:
    """List the built-in validators and every diagnostic code with its meaning."""
    from assay.cli.listing import print_validators

    print_validators()


@app.command()
def revalidate(
    run_dir: Annotated[Path, typer.Argument(help="A run's output directory.")],
    validator: Annotated[
        list[str] | None,
        typer.Option(
            metavar="NAME|MODULE:ATTR",
            help="Add a validator: a built-in name or package.module:name.",
        ),
    ] = None,
    strict: Annotated[bool, typer.Option("--strict", help="Use the strict chains.")] = False,
    no_default_validators: Annotated[
        bool, typer.Option("--no-default-validators", help="Only the --validator ones.")
    ] = False,
    max_error_rate: Annotated[
        float | None, typer.Option(help="Validity threshold [the run's].")
    ] = None,
) -> None:
    """Re-apply a validator chain to a run's stored responses and write a new report beside it.

    Only the definition of "usable" changes: transport and protocol errors stay as they were.
    """
    from assay.cli.revalidate_command import revalidate_run

    def body() -> int:
        return revalidate_run(
            run_dir,
            validators=tuple(validator or ()),
            strict=strict,
            default_validators=not no_default_validators,
            max_error_rate=max_error_rate,
        )

    _exit(_guarded(body))


def _guarded(body: Callable[[], int]) -> int:
    try:
        code = body()
    except AssayError as error:
        typer.echo(f"error: {error}", err=True)
        return EXIT_USAGE
    except KeyboardInterrupt:
        typer.echo("interrupted", err=True)
        return EXIT_INTERRUPTED
    return code


def _exit(code: int) -> NoReturn:
    raise typer.Exit(code)


def main() -> None:
    """Console entry point."""
    try:
        app()
    except KeyboardInterrupt:
        sys.exit(EXIT_INTERRUPTED)
