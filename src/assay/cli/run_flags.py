"""Every option of `assay run`, one row each: the config key it sets, the flag as typed, its
help, its help panel and its type. The command's signature (`assay.cli.run_command`), the
config keys the flags set (`assay.cli.run_overrides`) and the flags messages name are read
from these rows.

A help that names a closed set (the endpoints, the profiles, ...) is built from the set when
help is shown, so it cannot fall behind the set; the set is imported only then, which keeps
every other start of the command line fast.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, cast, get_args

from assay.cli.options import (
    parse_fraction,
    parse_headers,
    parse_json_objects,
    parse_mapping,
    parse_pairs,
    parse_slo_limits,
    parse_texts,
)

TARGET: Final = "Target"
LOAD: Final = "Load"
LIMITS: Final = "Constraints"
DATA: Final = "Data"
FIELDS: Final = "Request fields"
VALID: Final = "Validation"
NET: Final = "Transport"
OUT: Final = "Output"
MOCK: Final = "Embedded mock (when no --target)"


def either(members: Sequence[str]) -> str:
    """`a, b or c`.

    >>> either(["png", "jpeg"])
    'png or jpeg'
    """
    return ", ".join(members[:-1]) + " or " + members[-1] if len(members) > 1 else "".join(members)


@dataclass(frozen=True, slots=True)
class ClosedSet:
    """A text naming every member of a closed set: `text` with `{}` replaced by the members,
    joined by `join`; the set is read (and imported) only when the text is rendered."""

    members: Callable[[], Sequence[str]]
    text: str = "{}"
    join: Callable[[Sequence[str]], str] = " | ".join

    def render(self) -> str:
        return self.text.replace("{}", self.join(self.members()))


@dataclass(frozen=True, slots=True)
class Flag:
    """One option of `assay run`.

    `key` is the config key it sets (None: not configuration); `flag` is the option as typed,
    `--KEY` with dashes unless given. A repeated flag (`kind` `list[str]`) is turned into the
    key's value by `parse`; a switch with `given` sets the key to it when given.
    """

    key: str | None
    kind: type
    panel: str
    help: str | ClosedSet
    flag: str = ""
    metavar: str | ClosedSet | None = None
    parse: Callable[[list[str] | None, str], object] | None = None
    given: object = None

    @property
    def spelling(self) -> str:
        """The option as typed: `--max-requests`, `--stream/--no-stream`."""
        return self.flag or f"--{(self.key or '').replace('_', '-')}"

    @property
    def name(self) -> str:
        """The name the command receives the flag's value under: `max_requests`, `stream`."""
        return self.spelling.split("/")[0].removeprefix("--").replace("-", "_")

    def help_text(self) -> str:
        return self.help if isinstance(self.help, str) else self.help.render()

    def metavar_text(self) -> str | None:
        return self.metavar.render() if isinstance(self.metavar, ClosedSet) else self.metavar

    def config_value(self, value: object) -> object:
        """The key's value for the flag's `value` as the command received it (None: not given)."""
        if self.given is not None:
            return self.given if value else None
        if self.parse is not None:
            # typer gives a repeated option's strings as a list, or None.
            return self.parse(cast("list[str] | None", value), self.spelling)
        return value


def _endpoints() -> tuple[str, ...]:
    from assay.spec.endpoint import Endpoint

    return tuple(Endpoint)


def _retry_statuses() -> tuple[str, ...]:
    from assay.backend.readiness import RETRY_STATUSES

    return tuple(str(status) for status in sorted(RETRY_STATUSES))


def _profiles() -> tuple[str, ...]:
    from assay.spec.load import ProfileKind

    return get_args(ProfileKind)


def key_choices(key: str) -> tuple[str, ...]:
    """The values a config key typed as a `Literal` takes, read from its field in its section
    (of a union of sections, the load profiles, the one that has the field).

    >>> key_choices("image_format"), key_choices("engine"), key_choices("capacity_axis")
    (('png', 'jpeg'), ('local', 'ray'), ('rate', 'concurrency'))
    """
    from assay.config import RunConfig
    from assay.spec.flat import FLAT_KEYS

    annotation: Any = RunConfig
    for part in FLAT_KEYS[key]:
        sections = get_args(annotation) or (annotation,)
        owner = next(each for each in sections if part in getattr(each, "model_fields", ()))
        annotation = owner.model_fields[part].annotation
    return get_args(annotation)


def choices(
    key: str, text: str = "{}", join: Callable[[Sequence[str]], str] = "|".join
) -> ClosedSet:
    """The closed set of the values config key `key` takes (`key_choices`)."""
    return ClosedSet(lambda: key_choices(key), text, join)


def _column_roles() -> tuple[str, ...]:
    from assay.spec.source import PromptColumns

    return tuple(PromptColumns.model_fields)


def _slo_keys() -> tuple[str, ...]:
    from assay.spec.validation import SLO_KEYS

    return SLO_KEYS


# fmt: off
RUN_FLAGS: Final[tuple[Flag, ...]] = (
    Flag("target", str, TARGET, "Server base URL; without it an embedded mock server is started."),
    Flag("endpoint", str, TARGET, ClosedSet(_endpoints, "{} [chat]")),
    Flag("model", str, TARGET, "Model name; default: the first one /v1/models lists. Several "
         "make a traffic mix: a=0.7,b=0.3 (weights, normalised) or a,b (alike); every one must "
         "be served.", metavar="NAME|A=W,B=W,..."),
    Flag("model_mix", str, TARGET, "How a mix picks each request's model: random draws it from "
         "the weights, seeded by --seed; round-robin cycles the models in order, each as many "
         "times as its weight (a=2,b=1: a,a,b,...) [random].", metavar=choices("model_mix")),
    Flag("api_key_env", str, TARGET, "Environment variable holding the API key; one named here "
         "must be set [OPENAI_API_KEY, when set]."),
    Flag("headers", list[str], TARGET, "Extra request header 'Name: value' (repeatable).",
         flag="--header", metavar="'NAME: VALUE'", parse=parse_headers),
    Flag("secret_headers", list[str], TARGET, "A header whose value is a secret, masked and "
         "redacted everywhere (repeatable; Authorization, *-Key, *-Token, Cookie and the like "
         "already are).", flag="--secret-header", metavar="NAME", parse=parse_texts),
    Flag("request_id_header", str, TARGET, "Header carrying each request's UUID, or none "
         "[X-Request-Id].", metavar="NAME|none"),
    Flag("trace_context", bool, TARGET, "Send a W3C traceparent on every request (ids unique to "
         "the run; kept in records.jsonl), to find requests in the server's traces."),
    Flag("trace_from_seed", bool, TARGET, "Derive --trace-context ids from --seed alone: a rerun "
         "with the same seed sends the same trace ids."),
    Flag("trace_sample", float, TARGET, "Fraction of --trace-context requests sent with the "
         "sampled flag [1].", metavar="R"),
    Flag("insecure", bool, TARGET, "Do not verify TLS certificates."),
    Flag("ca_bundle", Path, TARGET, "A PEM file of CA certificates to trust besides the system's."),
    Flag("wait_ready", float, TARGET, ClosedSet(_retry_statuses, "Retry a server that is still "
         "starting (refused, {}, no model yet) this long [0].", "/".join), metavar="SECONDS"),
    Flag("probe", bool, TARGET, "Send no probe request before the load (it checks the endpoint "
         "answers).", flag="--no-probe", given=False),
    Flag("context_window", int, TARGET, "The model's context window: each request must fit it "
         "(prompt + output limit), checked before the load [what /v1/models names as "
         "max_model_len; 0: no check].", metavar="TOKENS"),
    Flag("profile", str, LOAD, ClosedSet(_profiles, "{} [throughput; ramp_up with --ramp-up]")),
    Flag("rate", float, LOAD, "Requests/s for constant and poisson."),
    Flag("concurrency", int, LOAD, "Streams for concurrent; the cap for throughput and sweep "
         "[64]."),
    Flag("sweep_rates", int, LOAD, "Constant-rate steps of a sweep [5]."),
    Flag("sweep_concurrency", str, LOAD, "Sweep over these concurrency levels instead of rates: "
         "one concurrent step per level, in order, e.g. 1,4,16,64.", metavar="N,N,..."),
    Flag("burstiness", float, LOAD, "Gamma-distributed gaps of shape F between arrivals of "
         "constant, poisson and ramp_up (mean 1/rate; 1 is Poisson, below 1 burstier), seeded "
         "by --seed.", metavar="F"),
    Flag("ramp_up", str, LOAD, "Ramp the offered rate from --ramp-up-start-rate to "
         "--ramp-up-end-rate over --max-seconds (or over the time the ramp takes to offer "
         "--max-requests).", metavar=choices("ramp_up")),
    Flag("ramp_up_start_rate", float, LOAD, "Requests/s at the ramp's start."),
    Flag("ramp_up_end_rate", float, LOAD, "Requests/s at the ramp's end."),
    Flag("trace", Path, LOAD, "A timestamped JSONL trace for --profile replay (Mooncake or prompt "
         "rows)."),
    Flag("replay_speed", float, LOAD, "Replay N times as fast as the trace [1]."),
    Flag("capacity_slos", list[str], LOAD, "A capacity search's SLOs [those of --slo].",
         metavar="FIGURE=MS@pXX", parse=parse_texts),
    Flag("capacity_axis", str, LOAD, "What a capacity search varies [rate].",
         metavar=choices("capacity_axis")),
    Flag("capacity_arrivals", str, LOAD, "A rate search's arrivals [constant].",
         metavar=choices("capacity_arrivals")),
    Flag("capacity_start", float, LOAD, "A capacity search's first load [enough requests to "
         "pass its strictest SLO in one step; 1 stream]."),
    Flag("capacity_growth", float, LOAD, "Multiply the load by this until a step fails [2]."),
    Flag("capacity_precision", str, LOAD, "Stop when first fail - last pass is within this of "
         "the last pass [5%].", metavar="5%", parse=parse_fraction),
    Flag("capacity_confidence", float, LOAD, "The confidence of each step's verdict [0.95]."),
    Flag("capacity_max_lengthening", int, LOAD, "Times an undecided step is run again at its "
         "load [4]."),
    Flag("capacity_step_s", float, LOAD, "Seconds of each capacity step (its first tenth a "
         "warm-up) [10]; --max-seconds is the whole search's budget.", metavar="SECONDS"),
    Flag("capacity_budget_s", float, LOAD, "The whole search's budget [--max-seconds].",
         metavar="SECONDS"),
    Flag("trace_block_tokens", int, LOAD, "Tokens per Mooncake hash block [512, as Mooncake]."),
    Flag("processes", int, LOAD, "Load-generating processes [the CPUs a server on this machine "
         "leaves: all but the mock's workers, half for a loopback --target; 1 for "
         "--max-requests up to 256 at no more than 1,000 req/s]."),
    Flag("engine", str, LOAD, "Where the load runs: local processes, or ray (actors on a Ray "
         'cluster; pip install -e ".[ray]") [local].'),
    Flag("ray_address", str, LOAD, "The Ray cluster's head, HOST:PORT or auto [a local Ray on "
         "loopback]."),
    Flag("ray_workers", int, LOAD, "Ray actors, one load slice each [one per CPU of the cluster]."),
    Flag("max_seconds", float, LIMITS, "Stop each step after this long [10 when nothing else "
         "bounds it]."),
    Flag("max_requests", int, LIMITS, "Stop each step after this many requests."),
    Flag("max_errors", int, LIMITS, "Stop a step after this many errored requests."),
    Flag("stop_error_rate", float, LIMITS, "Stop a step when the windowed error rate passes this "
         "fraction."),
    Flag("warmup_seconds", float, LIMITS, "Requests starting this early in a step are not "
         "measured."),
    Flag("cooldown_seconds", float, LIMITS, "Requests starting this late in a step are not "
         "measured."),
    Flag("data", Path, DATA, "Prompt data: a JSONL, CSV, JSON (ShareGPT), parquet or arrow file, "
         "or hf:NAME_OR_PATH[:SPLIT]; default: synthetic prompts."),
    Flag("data_columns", list[str], DATA,
         ClosedSet(_column_roles, "The column holding a role: {} (repeatable).", either),
         flag="--data-column", metavar="ROLE=COLUMN", parse=parse_mapping),
    Flag("data_cycle", bool, DATA, "Reuse the rows of --data in file order, pass after pass, "
         "until --max-requests or --max-seconds (by default each row is sent once)."),
    Flag("allowed_media_paths", list[str], DATA, "A folder besides --data's own that a row's "
         "local images may be read from (repeatable; by default only the data file's folder).",
         flag="--allowed-media-path", metavar="DIR", parse=parse_texts),
    Flag("multi_turn", bool, DATA, "Run each conversation of --data (ShareGPT, or a `turns` list) "
         "as a session: turn k+1 carries the answers really received."),
    Flag("turns", int, DATA, "Synthetic sessions of this many turns of --prompt-tokens each [1]."),
    Flag("think_time_ms", float, DATA, "Pause between a session's turns [0]."),
    Flag("prompt_tokens", str, DATA, "Synthetic prompt tokens: N, normal:MEAN,STDEV,MIN,MAX or "
         "uniform:MIN,MAX [256]."),
    Flag("output_tokens", str, DATA, "Output tokens asked for, same forms [128]."),
    Flag("documents", int, DATA, "Rerank and score: synthetic documents per request, scored "
         "against a query of --prompt-tokens [8]."),
    Flag("document_tokens", str, DATA, "Rerank and score: tokens of each synthetic document, same "
         "forms as --prompt-tokens [128]."),
    Flag("shared_prefix_tokens", int, DATA, "A prefix shared by every synthetic prompt (prefix "
         "caching)."),
    Flag("images", str, DATA, "Synthetic images in each chat request: N, uniform:MIN,MAX or "
         "normal:MEAN,STDEV,MIN,MAX [0]."),
    Flag("image_size", str, DATA, "Synthetic image size WxH in pixels [512x512]."),
    Flag("image_format", str, DATA,
         choices("image_format", "Synthetic image encoding: {} [png].", either)),
    Flag("audio_seconds", float, DATA, "Seconds of synthetic WAV audio: an input_audio part of "
         "each chat request, or the file a transcription uploads; at most 600 [0]."),
    Flag("tokenizer", str, DATA, "A local tokenizer.json (file or directory); default: built-in."),
    Flag("stream", bool, DATA, "Stream the answers [stream].", flag="--stream/--no-stream"),
    Flag("ignore_eos", bool, DATA, "Ask for exactly the output tokens (vLLM, SGLang)."),
    Flag("continuous_usage_stats", bool, DATA, "Ask for a running usage on every chunk (vLLM), so "
         "the usage check can reconcile the count both ways."),
    Flag("seed", int, DATA, "Seed for data and arrivals [42]."),
    Flag("temperature", float, FIELDS, "Sampling temperature."),
    Flag("top_p", float, FIELDS, "Nucleus sampling top_p."),
    Flag("stop", list[str], FIELDS, "A stop sequence (repeatable).",
         metavar="TEXT", parse=parse_texts),
    Flag("request_seed", int, FIELDS, "The `seed` field of every request (--seed seeds assay's "
         "own data)."),
    Flag("extra_body", list[str], FIELDS, "A JSON object merged into every request body, last "
         '(repeatable; merged left to right), e.g. \'{"response_format": {"type": '
         '"json_object"}}\'.', metavar="JSON", parse=parse_json_objects),
    Flag("validators", list[str], VALID, "Add a validator: a built-in name or package.module:name "
         "(repeatable; see `assay validators`).",
         flag="--validator", metavar="NAME|MODULE:ATTR", parse=parse_texts),
    Flag("default_validators", bool, VALID, "Use only the --validator ones, not the endpoint's "
         "default chain.", flag="--no-default-validators", given=False),
    Flag("strict", bool, VALID, "Strict chain: finish_reason required everywhere, two-sided usage "
         "where the stream proves its count."),
    Flag("allow_missing_done", bool, VALID, "For servers that never end a stream with [DONE]: a "
         "stream that carried a finish_reason passes without it (by default it is "
         "truncated_stream)."),
    Flag("slo", list[str], VALID,
         ClosedSet(_slo_keys, "Goodput SLO, e.g. ttft_ms=500 ({}); with --profile capacity "
                   "FIGURE=MS@pXX, the percentile that must meet it [p99].", ", ".join),
         metavar="KEY=MS[@pXX]", parse=parse_slo_limits),
    Flag("max_error_rate", float, VALID, "A run above this error rate is INVALID (exit 1) [0.05]."),
    Flag("max_not_sent_rate", float, VALID, "A run whose client left more than this share of its "
         "scheduled requests unsent (it fell behind) is INVALID [0.05]."),
    Flag("timeout_connect", float, NET, "Seconds [10]."),
    Flag("timeout_first_token", float, NET, "Seconds [60]."),
    Flag("timeout_idle", float, NET, "Seconds between bytes [30]."),
    Flag("timeout_total", float, NET, "Seconds [600]."),
    Flag("max_response_bytes", int, NET, "Fail a response larger than this as response_too_large "
         "[67108864 = 64 MiB]."),
    Flag("output_dir", Path, OUT, "Where report.json, records.jsonl and summary.csv go "
         "[assay-results/run-<time>]."),
    Flag(None, Path, OUT, "A TOML or JSON file whose keys mirror these flags; flags win.",
         flag="--config"),
    Flag("mock_workers", int, MOCK, "Mock server processes [1]."),
    Flag("mock_ttft_ms", float, MOCK, "Mock time to first token [40]."),
    Flag("mock_itl_ms", float, MOCK, "Mock inter-token latency [8]."),
    Flag("mock_faults", list[str], MOCK, "Inject a fault at a rate, e.g. empty_stream=0.02 (see "
         "`assay mock --help`).", flag="--mock-fault", metavar="NAME=RATE", parse=parse_pairs),
    Flag("server_metrics", str, OUT, "The server's Prometheus metrics [TARGET/metrics when it "
         "answers].", metavar="URL|off"),
    # After --server-metrics: when given, it wins over it.
    Flag("server_metrics", bool, OUT, "Do not scrape server metrics.",
         flag="--no-server-metrics", given="off"),
    Flag("server_metrics_interval", float, OUT, "Seconds between metric scrapes [1]."),
    Flag("gpu_metrics", str, OUT, "A DCGM exporter's metrics, scraped beside the server's: the "
         "GPUs' energy per usable output token.", metavar="URL"),
    Flag("cost_per_hour", str, OUT, "The server's price per hour, USD or GPUSxUSD (8x2.5: eight "
         "GPUs at $2.50): the report's cost per usable token and request.",
         metavar="USD|GPUSxUSD"),
    Flag("mock_record_requests", Path, MOCK, "Append every request the mock receives to this "
         "JSONL file."),
    Flag("mock_slots", int, MOCK, "Mock answers at most N at once, queueing the rest."),
    Flag("mock_tokens_per_s", float, MOCK, "Mock lets out at most this many tokens/s in all."),
    Flag("mock_fault_past", int, MOCK, "Mock answers badly past this many requests in it.",
         metavar="REQUESTS"),
    Flag("mock_load_fault", str, MOCK, "How the mock answers past --mock-fault-past [empty].",
         metavar=choices("mock_load_fault")),
    Flag("mock_gpu_watts", float, MOCK, "The mock's /metrics shows a simulated GPU drawing this "
         "many watts (DCGM power and energy), so a run reports joules per usable token.",
         metavar="WATTS"),
)
# fmt: on
"""The options of `assay run`, in the order its help lists them."""

CONFIG_FILE_FLAG: Final = next(row for row in RUN_FLAGS if row.key is None)
"""`--config`, the one flag that is not configuration: the config file itself."""


__all__ = [
    "CONFIG_FILE_FLAG",
    "RUN_FLAGS",
    "ClosedSet",
    "Flag",
    "either",
    "choices",
    "key_choices",
]
