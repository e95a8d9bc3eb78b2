"""Every package's exported names are pinned here: adding or removing one is a deliberate edit.

Each package's `__all__` is its contract: every name in it exists, and no other public name
(a helper imported for the package's own use) leaks from it. `assay` and `assay.benchmark`
import their names on first use; type checkers read the same names from their
`if TYPE_CHECKING:` imports, and the tests below hold the two equal.
"""

from __future__ import annotations

import ast
import importlib
import pkgutil
import subprocess
import sys
import types
from pathlib import Path

import pytest

import assay

EXPORTED: dict[str, list[str]] = {
    "assay": [
        "Completed",
        "CustomCode",
        "DiagnosticCode",
        "Endpoint",
        "Errored",
        "Evidence",
        "GenerationRequest",
        "GenerationResponse",
        "Report",
        "ResponseTiming",
        "RunConfig",
        "RunOutcome",
        "Stage",
        "ToolCall",
        "UnusableResponse",
        "Usage",
        "Validator",
        "__version__",
        "chain",
        "default_chain",
        "judge",
        "judge_bytes",
        "load_report",
        "outcome",
        "reject",
        "run_from_config",
    ],
    "assay.backend": [
        "Backend",
        "BackendSettings",
        "Redactor",
        "Timeouts",
        "check_ready",
        "open_backend",
        "split_endpoint_path",
        "wait_until_ready",
        "wire_request_id",
    ],
    "assay.h1": [
        "ConnectFailure",
        "FaultKind",
        "H1Connection",
        "H1Pool",
        "PreparedRequests",
        "ResponseReader",
        "WireFault",
        "proxy_for",
        "refuse_proxy",
    ],
    "assay.benchmark": [
        "ChainSpec",
        "RunOutcome",
        "run_from_config",
    ],
    "assay.cli": [],
    "assay.config": [
        "FIELD_NAMES",
        "PROCESSES_PER_CPU",
        "ProfileKind",
        "RunConfig",
        "SLO_KEYS",
        "build_config",
        "check_machine_limits",
        "describe_validation_error",
        "load_config_file",
        "usable_cpus",
    ],
    "assay.core": [
        "AnyCode",
        "CODE_MEANINGS",
        "Clock",
        "CustomCode",
        "DiagnosticCode",
        "EmbeddingSummary",
        "Endpoint",
        "Evidence",
        "ExchangeIds",
        "GenerationRequest",
        "GenerationResponse",
        "MonotonicClock",
        "RequestEcho",
        "ResponseTiming",
        "ScoreSummary",
        "Scores",
        "SentBody",
        "Stage",
        "TextAnswer",
        "TokenSource",
        "ToolCall",
        "UnusableResponse",
        "Usage",
        "Vectors",
        "cap_excerpt",
        "outcome",
        "parse_code",
        "stage_of",
    ],
    "assay.data": [
        "BUILTIN",
        "BuiltinTokenizer",
        "FileFormat",
        "FileSource",
        "FileSourceConfig",
        "FixedCount",
        "NormalCount",
        "PromptColumns",
        "PromptRow",
        "RequestSource",
        "SourceConfig",
        "SyntheticSource",
        "TokenCount",
        "Tokenizer",
        "UniformCount",
        "build_source",
        "index_rng",
        "load_tokenizer",
        "parse_token_count",
        "request_id",
        "sample_token_count",
        "shared_rng",
        "smallest_count",
    ],
    "assay.handlers": [
        "ChatAccumulator",
        "ChatHandler",
        "CompletionsAccumulator",
        "CompletionsHandler",
        "EmbeddingsAccumulator",
        "EmbeddingsHandler",
        "EndpointHandler",
        "RerankHandler",
        "ResponsesAccumulator",
        "ResponsesHandler",
        "ScoreHandler",
        "ScoresAccumulator",
        "SseEvent",
        "SseFrame",
        "SseParser",
        "StreamAccumulator",
        "Transfer",
        "handler_for",
    ],
    "assay.metrics": [
        "Concurrency",
        "ConcurrencyPeak",
        "ConcurrencyTracker",
        "Distribution",
        "ErrorSummary",
        "Goodput",
        "Latency",
        "Outcomes",
        "PERCENTILES",
        "QuantileSketch",
        "RELATIVE_ERROR",
        "Slo",
        "StepAggregator",
        "StepMetrics",
        "Throughput",
        "TimeWindow",
        "Timeline",
        "TimelineSnapshot",
        "Tokens",
    ],
    "assay.mock": [
        "FAULTS",
        "FAULT_HEADER",
        "FaultInfo",
        "FaultSpec",
        "Fixed",
        "LatencyModel",
        "MockConfig",
        "MockServer",
        "Normal",
        "REQUEST_ID_HEADER",
        "Uniform",
        "choose_fault",
        "open_mock_server",
        "parse_fault_header",
        "sample",
        "serve",
        "start_mock_processes",
    ],
    "assay.records": [
        "Cancelled",
        "Completed",
        "Errored",
        "JudgedBy",
        "RecordWriter",
        "RequestRecord",
        "read_records",
        "record_from_line",
        "record_line",
    ],
    "assay.reports": [
        "Environment",
        "Incomplete",
        "REPORT_FILE",
        "Report",
        "SCHEMA_VERSION",
        "SUMMARY_COLUMNS",
        "SUMMARY_FILE",
        "StepReport",
        "Totals",
        "Validity",
        "assess_validity",
        "build_report",
        "collect_environment",
        "load_report",
        "render_summary",
        "summary_row",
        "write_report",
    ],
    "assay.engine": [
        "BenchmarkPlan",
        "BenchmarkResult",
        "Concurrent",
        "Constant",
        "Constraints",
        "CountingSink",
        "LoadProcessError",
        "LoadProcesses",
        "OutcomeCounts",
        "OutcomeTotals",
        "Poisson",
        "Profile",
        "ProgressSnapshot",
        "RampUp",
        "RateRamp",
        "RayActors",
        "RecordSink",
        "SinkFactory",
        "StepContext",
        "StepLoad",
        "StepResult",
        "StopReason",
        "Sweep",
        "Synchronous",
        "Throughput",
        "counting_sink",
        "run_benchmark",
        "run_benchmark_async",
        "start_load_processes",
        "start_ray_actors",
    ],
    "assay.load": [],
    "assay.spec": [
        "Answer",
        "Carries",
        "Concurrent",
        "Constant",
        "Constraints",
        "DEFAULT_MAX_ERROR_RATE",
        "DEFAULT_MAX_NOT_SENT_RATE",
        "Endpoint",
        "EndpointTraits",
        "NS_PER_S",
        "Pacing",
        "Poisson",
        "Profile",
        "ProfileKind",
        "RampUp",
        "RateRamp",
        "Replay",
        "SLO_KEYS",
        "SendableHeaders",
        "StepLoad",
        "StopReason",
        "Sweep",
        "Synchronous",
        "Throughput",
        "check_header",
        "check_target",
        "mask_headers",
        "mask_url",
        "pacing",
    ],
    "assay.server_metrics": [
        "Accounting",
        "AssayCounts",
        "CrossCheck",
        "PLAIN_ACCOUNTING",
        "Quantity",
        "Scraped",
        "ServerCounts",
        "ServerKind",
        "ServerMetricsObserver",
        "ServerMetricsReport",
        "ServerSeries",
        "StepBounds",
        "StepServerCounts",
        "TimedSample",
        "accounting_notes",
        "accounting_of",
        "counter_delta",
        "cross_check",
        "detect_kind",
        "parse_exposition",
        "quantities_of",
        "scrape",
        "summarize",
    ],
    "assay.testing": [
        "FakeClock",
    ],
    "assay.validators": [
        "BUILTIN_VALIDATORS",
        "BuiltinValidator",
        "Chain",
        "Screen",
        "Validator",
        "builtin_validator",
        "chain",
        "custom_codes_of",
        "default_chain",
        "empty_embedding",
        "empty_response",
        "impossible_usage",
        "invalid_json_output",
        "invalid_result_index",
        "invalid_tool_call",
        "load_validator",
        "max_tokens_not_honoured",
        "missing_finish_reason",
        "named_steps",
        "no_results",
        "non_finite_score",
        "reject",
        "resolve_validator",
        "result_count_mismatch",
        "screened",
        "stream_without_finish_reason",
        "truncated_before_finish",
        "truncated_stream",
        "usage_mismatch",
        "validator_name",
    ],
    "assay.worker": [
        "execute",
        "judge",
        "judge_bytes",
    ],
}

# The packages whose names are imported on first use (see assay.lazy_exports).
LAZY = ("assay", "assay.benchmark", "assay.engine")


def packages() -> list[str]:
    found = [info.name for info in pkgutil.walk_packages(assay.__path__, "assay.") if info.ispkg]
    return sorted(["assay", *found])


def exported(package: str) -> list[str]:
    names = importlib.import_module(package).__dict__.get("__all__")
    assert isinstance(names, list), f"{package} has no __all__ list"
    return [str(name) for name in names]


def typed_imports(package: str) -> dict[str, str]:
    """The names a package imports under `if TYPE_CHECKING:`, with the module of each."""
    source = Path(importlib.import_module(package).__file__ or "").read_text(encoding="utf-8")
    found: dict[str, str] = {}
    for node in ast.parse(source).body:
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for statement in node.body:
                if isinstance(statement, ast.ImportFrom) and statement.module is not None:
                    for alias in statement.names:
                        found[alias.asname or alias.name] = statement.module
    return found


def test_every_package_has_its_names_pinned() -> None:
    assert packages() == sorted(EXPORTED)


@pytest.mark.parametrize("package", sorted(EXPORTED))
def test_package_exports_exactly_its_pinned_names(package: str) -> None:
    names = exported(package)
    assert len(set(names)) == len(names), f"{package}.__all__ repeats a name"
    assert sorted(names) == EXPORTED[package]


@pytest.mark.parametrize("package", sorted(EXPORTED))
def test_every_exported_name_exists(package: str) -> None:
    module = importlib.import_module(package)
    missing = [name for name in exported(package) if not hasattr(module, name)]
    assert missing == []


@pytest.mark.parametrize("package", sorted(EXPORTED))
def test_no_public_name_leaks_beyond_all(package: str) -> None:
    module = importlib.import_module(package)
    public = {
        name
        for name, value in vars(module).items()
        if not name.startswith("_")
        and not isinstance(value, types.ModuleType)
        # The constant a lazy package's type-checking imports hang on (see assay.lazy_exports).
        and not (name == "TYPE_CHECKING" and value is False)
    }
    assert public - set(exported(package)) == set()


@pytest.mark.parametrize("package", LAZY)
def test_lazy_names_are_the_names_type_checkers_see(package: str) -> None:
    module = importlib.import_module(package)
    typed = typed_imports(package)
    assert sorted(typed) == sorted(name for name in exported(package) if name != "__version__")
    for name, home in typed.items():
        assert getattr(module, name) is getattr(importlib.import_module(home), name), name


@pytest.mark.parametrize("package", LAZY)
def test_no_lazy_name_is_also_a_submodule(package: str) -> None:
    # Once such a submodule is imported, the package attribute would be the module.
    path = importlib.import_module(package).__path__
    submodules = {info.name for info in pkgutil.iter_modules(path)}
    assert submodules & set(exported(package)) == set()


def loaded_after(statement: str, roots: tuple[str, ...] = ("assay", "pydantic")) -> list[str]:
    """The modules of `roots` a fresh interpreter holds after `statement`."""
    probe = (
        f"{statement}; import sys; "
        "print('\\n'.join(sorted(m for m in sys.modules if m.split('.')[0] in "
        f"{roots!r})))"
    )
    run = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True
    )
    return run.stdout.split()


def test_import_assay_loads_no_layer_of_the_pipeline() -> None:
    assert loaded_after("import assay") == ["assay", "assay.lazy_exports", "assay.version"]


def test_first_use_of_a_name_imports_its_module() -> None:
    loaded = loaded_after("import assay; assay.Endpoint")
    assert "assay.core" in loaded
    assert "assay.worker" not in loaded


def test_validator_chain_spec_does_not_load_the_report_code_into_load_processes() -> None:
    # A load process unpickles the run's ChainSpec, which imports assay.benchmark.
    loaded = loaded_after("import assay.benchmark.chain_spec")
    assert "assay.benchmark.run" not in loaded
    assert "assay.reports" not in loaded


def test_reading_a_report_imports_no_http_client_and_no_load_generation() -> None:
    # `assay.load_report`, `assay report` and `assay compare` read files: the backend, aiohttp
    # and the load generation stay unimported (they cost most of a second).
    loaded = loaded_after("import assay.reports", roots=("assay", "aiohttp"))
    assert not [m for m in loaded if m.split(".")[0] == "aiohttp"]
    assert "assay.backend" not in loaded
    assert "assay.engine.coordinator" not in loaded
    assert "assay.reports.report" in loaded
