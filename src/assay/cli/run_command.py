"""`assay run`: its flags, the checks made before any process starts, and the console around
the run (progress, then the summary and where the files are); the exit code says the outcome.

Each flag reaches `RunConfig` by its name (`assay.cli.run_overrides`). What the run needs is
imported only once it runs, so `assay --help` stays fast.
"""

# Annotations are evaluated here, once, at import (no `from __future__ import annotations`):
# typer reads every flag's annotation at each start, and would otherwise evaluate the strings.

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from assay.cli.exit_codes import EXIT_INTERRUPTED, EXIT_INVALID, EXIT_VALID
from assay.cli.guard import exit_guarded

if TYPE_CHECKING:
    from assay.config import RunConfig
    from assay.load_launcher import LoadProcesses
    from assay.run_folder import RunFolder

_TARGET = "Target"
_LOAD = "Load"
_LIMITS = "Constraints"
_DATA = "Data"
_FIELDS = "Request fields"
_VALID = "Validation"
_NET = "Transport"
_OUT = "Output"
_MOCK = "Embedded mock (when no --target)"


def run(
    ctx: typer.Context,
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
            help="completions | chat | responses | embeddings | rerank | score [chat]",
            rich_help_panel=_TARGET,
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
            help="Environment variable holding the API key; one named here must be set "
            "[OPENAI_API_KEY, when set].",
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
    secret_header: Annotated[
        list[str] | None,
        typer.Option(
            metavar="NAME",
            help="A header whose value is a secret, masked and redacted everywhere (repeatable; "
            "Authorization, *-Key, *-Token, Cookie and the like already are).",
            rich_help_panel=_TARGET,
        ),
    ] = None,
    request_id_header: Annotated[
        str | None,
        typer.Option(
            metavar="NAME|none",
            help="Header carrying each request's UUID, or none [X-Request-Id].",
            rich_help_panel=_TARGET,
        ),
    ] = None,
    trace_context: Annotated[
        bool | None,
        typer.Option(
            "--trace-context",
            help="Send a W3C traceparent on every request (ids from --seed and the request; "
            "kept in records.jsonl), to find requests in the server's traces.",
            rich_help_panel=_TARGET,
        ),
    ] = None,
    trace_sample: Annotated[
        float | None,
        typer.Option(
            metavar="R",
            help="Fraction of --trace-context requests sent with the sampled flag [1].",
            rich_help_panel=_TARGET,
        ),
    ] = None,
    insecure: Annotated[
        bool | None,
        typer.Option("--insecure", help="Do not verify TLS certificates.", rich_help_panel=_TARGET),
    ] = None,
    ca_bundle: Annotated[
        Path | None,
        typer.Option(
            help="A PEM file of CA certificates to trust besides the system's.",
            rich_help_panel=_TARGET,
        ),
    ] = None,
    wait_ready: Annotated[
        float | None,
        typer.Option(
            metavar="SECONDS",
            help="Retry a server that is still starting (refused, 429/503, no model yet) "
            "this long [0].",
            rich_help_panel=_TARGET,
        ),
    ] = None,
    no_probe: Annotated[
        bool,
        typer.Option(
            "--no-probe",
            help="Send no probe request before the load (it checks the endpoint answers).",
            rich_help_panel=_TARGET,
        ),
    ] = False,
    context_window: Annotated[
        int | None,
        typer.Option(
            metavar="TOKENS",
            help="The model's context window: each request must fit it (prompt + output "
            "limit), checked before the load [what /v1/models names as max_model_len; 0: no "
            "check].",
            rich_help_panel=_TARGET,
        ),
    ] = None,
    profile: Annotated[
        str | None,
        typer.Option(
            help="synchronous | concurrent | throughput | constant | poisson | ramp_up | sweep | "
            "replay [throughput; ramp_up with --ramp-up]",
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
    sweep_concurrency: Annotated[
        str | None,
        typer.Option(
            metavar="N,N,...",
            help="Sweep over these concurrency levels instead of rates: one concurrent step "
            "per level, in order, e.g. 1,4,16,64.",
            rich_help_panel=_LOAD,
        ),
    ] = None,
    burstiness: Annotated[
        float | None,
        typer.Option(
            metavar="F",
            help="Gamma-distributed gaps of shape F between arrivals of constant, poisson and "
            "ramp_up (mean 1/rate; 1 is Poisson, below 1 burstier), seeded by --seed.",
            rich_help_panel=_LOAD,
        ),
    ] = None,
    ramp_up: Annotated[
        str | None,
        typer.Option(
            metavar="linear|exponential",
            help="Ramp the offered rate from --ramp-up-start-rate to --ramp-up-end-rate over "
            "--max-seconds (or over the time the ramp takes to offer --max-requests).",
            rich_help_panel=_LOAD,
        ),
    ] = None,
    ramp_up_start_rate: Annotated[
        float | None,
        typer.Option(help="Requests/s at the ramp's start.", rich_help_panel=_LOAD),
    ] = None,
    ramp_up_end_rate: Annotated[
        float | None,
        typer.Option(help="Requests/s at the ramp's end.", rich_help_panel=_LOAD),
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
        typer.Option(
            help="Load-generating processes [CPU count; 1 for --max-requests up to 256].",
            rich_help_panel=_LOAD,
        ),
    ] = None,
    engine: Annotated[
        str | None,
        typer.Option(
            help="Where the load runs: local processes, or ray (actors on a Ray cluster; "
            'pip install -e ".[ray]") [local].',
            rich_help_panel=_LOAD,
        ),
    ] = None,
    ray_address: Annotated[
        str | None,
        typer.Option(
            help="The Ray cluster's head, HOST:PORT or auto [a local Ray on loopback].",
            rich_help_panel=_LOAD,
        ),
    ] = None,
    ray_workers: Annotated[
        int | None,
        typer.Option(
            help="Ray actors, one load slice each [one per CPU of the cluster].",
            rich_help_panel=_LOAD,
        ),
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
            "turns, query, documents or extra_body (repeatable).",
            rich_help_panel=_DATA,
        ),
    ] = None,
    data_cycle: Annotated[
        bool | None,
        typer.Option(
            "--data-cycle",
            help="Reuse the rows of --data in file order, pass after pass, until --max-requests "
            "or --max-seconds (by default each row is sent once).",
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
    documents: Annotated[
        int | None,
        typer.Option(
            help="Rerank and score: synthetic documents per request, scored against a query of "
            "--prompt-tokens [8].",
            rich_help_panel=_DATA,
        ),
    ] = None,
    document_tokens: Annotated[
        str | None,
        typer.Option(
            help="Rerank and score: tokens of each synthetic document, same forms as "
            "--prompt-tokens [128].",
            rich_help_panel=_DATA,
        ),
    ] = None,
    shared_prefix_tokens: Annotated[
        int | None,
        typer.Option(
            help="A prefix shared by every synthetic prompt (prefix caching).",
            rich_help_panel=_DATA,
        ),
    ] = None,
    images: Annotated[
        str | None,
        typer.Option(
            help="Synthetic images in each chat request: N, uniform:MIN,MAX or "
            "normal:MEAN,STDEV,MIN,MAX [0].",
            rich_help_panel=_DATA,
        ),
    ] = None,
    image_size: Annotated[
        str | None,
        typer.Option(help="Synthetic image size WxH in pixels [512x512].", rich_help_panel=_DATA),
    ] = None,
    image_format: Annotated[
        str | None,
        typer.Option(help="Synthetic image encoding: png or jpeg [png].", rich_help_panel=_DATA),
    ] = None,
    audio_seconds: Annotated[
        float | None,
        typer.Option(
            help="Seconds of synthetic WAV audio: an input_audio part of each chat request, "
            "or the file a transcription uploads [0].",
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
    continuous_usage_stats: Annotated[
        bool | None,
        typer.Option(
            "--continuous-usage-stats",
            help="Ask for a running usage on every chunk (vLLM), so the usage check can "
            "reconcile the count both ways.",
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
            help="Strict chain: finish_reason required everywhere, two-sided usage where the "
            "stream proves its count.",
            rich_help_panel=_VALID,
        ),
    ] = None,
    allow_missing_done: Annotated[
        bool | None,
        typer.Option(
            "--allow-missing-done",
            help="For servers that never end a stream with [DONE]: a stream that carried a "
            "finish_reason passes without it (by default it is truncated_stream).",
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
    max_not_sent_rate: Annotated[
        float | None,
        typer.Option(
            help="A run whose client left more than this share of its scheduled requests "
            "unsent (it fell behind) is INVALID [0.05].",
            rich_help_panel=_VALID,
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
    max_response_bytes: Annotated[
        int | None,
        typer.Option(
            help="Fail a response larger than this as response_too_large [67108864 = 64 MiB].",
            rich_help_panel=_NET,
        ),
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
    server_metrics: Annotated[
        str | None,
        typer.Option(
            metavar="URL|off",
            help="The server's Prometheus metrics [TARGET/metrics when it answers].",
            rich_help_panel=_OUT,
        ),
    ] = None,
    no_server_metrics: Annotated[
        bool,
        typer.Option(
            "--no-server-metrics", help="Do not scrape server metrics.", rich_help_panel=_OUT
        ),
    ] = False,
    server_metrics_interval: Annotated[
        float | None,
        typer.Option(help="Seconds between metric scrapes [1].", rich_help_panel=_OUT),
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

    Exit code 0: a valid run; 1: an INVALID run (error rate above --max-error-rate, nothing
    completed, the client fell behind past --max-not-sent-rate, or a load process was lost);
    2: bad usage or input, or files that cannot be written; 3: assay crashed (a bug; the
    traceback is saved); 130: interrupted by Ctrl-C or SIGTERM (the partial report is still
    written).
    """
    from datetime import UTC, datetime

    from assay.cli.crash import CrashSite
    from assay.cli.run_overrides import run_overrides
    from assay.config import build_config, check_machine_limits, load_config_file
    from assay.config.limits import load_processes
    from assay.run_folder import claim_run_folder

    def body() -> int:
        # Every flag above reaches the config through `ctx.params`, by its name.
        overrides = run_overrides(ctx.params)
        file_keys = load_config_file(config) if config is not None else {}
        run_config = build_config(file_keys, overrides)
        # Before any process starts: what this machine cannot do is refused, and the run
        # folder is claimed (a folder that cannot be written, or holds a run, is refused).
        for warning in check_machine_limits(run_config):
            typer.echo(f"warning: {warning}", err=True)
        claimed_at = datetime.now(UTC)
        folder = claim_run_folder(run_config.output_dir, claimed_at)
        try:
            # From the claim on, a Ctrl-C or SIGTERM anywhere leaves no empty folder behind, and
            # a crash leaves the records merged with a partial report (`merge_after_crash`).
            site.folder, site.config, site.started_at = folder.path, run_config, claimed_at
            from assay.load_launcher import start_load_processes

            if run_config.engine == "ray":
                return run_and_report(run_config, None, folder)  # the run starts its actors
            # The load processes import the run path (`run_and_report` imports it) while this
            # process does the same.
            with start_load_processes(load_processes(run_config)) as started:
                return run_and_report(run_config, started, folder)
        finally:
            folder.remove_if_empty()

    site = CrashSite()
    exit_guarded(body, site)


def run_and_report(
    config: "RunConfig",
    started: "LoadProcesses | None" = None,
    folder: "RunFolder | None" = None,
) -> int:
    """Run, print the summary and where the files are; the exit code for the outcome."""
    from assay.benchmark.from_config import constraints_of
    from assay.benchmark.run import injected_faults_caught, run_from_config
    from assay.cli.console import output_console
    from assay.cli.progress import ProgressDisplay
    from assay.reports import render_summary
    from assay.reports.server_section import render_server_metrics

    console = output_console()
    steps = None if config.profile == "sweep" else 1
    if config.sweep_concurrency:
        steps = len(config.sweep_concurrency)
    max_seconds = constraints_of(config).max_seconds
    with ProgressDisplay(console, steps=steps, max_seconds=max_seconds) as display:
        outcome = run_from_config(
            config, note=display.note, on_progress=display.update, started=started, folder=folder
        )
    render_summary(outcome.report, console)
    caught = injected_faults_caught(outcome.report)
    if caught is not None:
        console.print(caught, highlight=False)
    render_server_metrics(outcome.report, console)
    console.print(
        f"files: {outcome.output_dir}/ (report.json, report.html, records.jsonl, summary.csv)"
    )
    if outcome.interrupted:
        console.print("interrupted: the partial report and records were written")
        return EXIT_INTERRUPTED
    return EXIT_VALID if outcome.report.validity.valid else EXIT_INVALID
