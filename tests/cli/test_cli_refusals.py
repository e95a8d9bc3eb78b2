"""Every bad input the hostile-environment and trust reviews found (issues 9.14 and 10.8, the
ignored flags of 10.11, the absurd limits of 9.13): exit code 2, one `error:` line, no
traceback, no load started and no run folder left behind."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
from tests.cli.cli_harness import CliResult, assert_every_request_accounted, run_assay, run_fast
from tests.cli.test_cli_bad_input import assert_one_error_line

from assay.config import usable_cpus

# The words `{tmp}` stands for the test's own folder; a `.json` or `.toml` word with `{tmp}` is
# written from CONFIG_FILES first, `{data}` is a valid one-line prompt file.
CASES: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    # Output folders (9.14, 10.8)
    "output_dir_under_a_file": (("--output-dir", "{tmp}/a-file/run"), ("cannot write",)),
    "output_dir_is_a_file": (("--output-dir", "{tmp}/a-file"), ("is a file",)),
    "output_dir_in_proc": (("--output-dir", "/proc/nope"), ("cannot write", "/proc/nope")),
    "output_dir_not_writable": (("--output-dir", "/proc"), ("cannot write", "/proc")),
    # Config file values (9.14)
    "config_binary_file": (("--config", "{tmp}/binary.toml"), ("not UTF-8",)),
    # A config file's key is named as the file wrote it (issue 20 item 4).
    "config_nul_in_a_value": (("--config", "{tmp}/nul.json"), ("model: ", "U+0000")),
    "config_bytes_not_utf8": (("--config", "{tmp}/surrogate.json"), ("model: ", "not UTF-8")),
    "config_infinity": (("--config", "{tmp}/infinity.json"), ("max_seconds: ", "finite")),
    "config_nan": (("--config", "{tmp}/nan.json"), ("timeout_total: ", "finite")),
    "config_boolean_for_a_number": (
        ("--config", "{tmp}/boolean.json"),
        ("seed: ", "expected a number, not True"),
    ),
    "config_boolean_in_a_number_map": (("--config", "{tmp}/slo.json"), ("slo: ", "number")),
    "header_with_cr_lf": (("--header", "X-Team: infra\r\nX-Injected: 1"), ("line break",)),
    "header_name_with_a_space": (("--header", "X Team: infra"), ("header name",)),
    # Numbers (9.14, 10.8, 9.13)
    "prompt_tokens_zero": (("--prompt-tokens", "0"), ("prompt_tokens", "at least 1")),
    "output_tokens_zero": (("--output-tokens", "0"), ("output_tokens", "at least 1")),
    "shared_prefix_longer_than_prompts": (
        ("--shared-prefix-tokens", "100000000"),
        ("shared_prefix_tokens",),
    ),
    "max_seconds_inf": (("--max-seconds", "inf"), ("max-seconds", "finite")),
    "timeout_connect_inf": (("--timeout-connect", "inf"), ("timeout-connect", "finite")),
    "warmup_seconds_inf": (
        ("--max-seconds", "5", "--warmup-seconds", "inf"),
        ("warmup-seconds", "finite"),
    ),
    "max_seconds_past_30_days": (("--max-seconds", "1e12"), ("max-seconds", "2592000")),
    "rate_1e_300": (("--profile", "constant", "--rate", "1e-300"), ("rate", "0.001")),
    "rate_above_a_million": (("--profile", "constant", "--rate", "1e9"), ("rate", "1,000,000")),
    "concurrency_a_billion": (("--concurrency", "1000000000"), ("--concurrency", "ulimit -n")),
    # Issue 37, item 5: a sweep's levels meet the open-file check --concurrency meets.
    "sweep_concurrency_a_million": (
        ("--profile", "sweep", "--sweep-concurrency", "1,1000000"),
        ("--sweep-concurrency 1000000", "ulimit -n"),
    ),
    "sweep_concurrency_10_to_the_30": (
        ("--profile", "sweep", "--sweep-concurrency", "1," + "1" + "0" * 30),
        ("--sweep-concurrency 1" + "0" * 30, "ulimit -n", "lower --sweep-concurrency"),
    ),
    "processes_100000": (("--processes", "100000"), ("--processes 100000", "per CPU")),
    "mock_workers_100000": (("--mock-workers", "100000"), ("--mock-workers 100000",)),
    # Targets (9.14, 10.8)
    "target_without_scheme": (("--target", "127.0.0.1:18431"), ("http://127.0.0.1:18431",)),
    "target_ftp": (("--target", "ftp://127.0.0.1:18431"), ("http://", "ftp://")),
    "target_socket_path": (("--target", "/run/llm.sock"), ("socket path",)),
    "target_scheme_alone": (("--target", "http://"), ("no host",)),
    "target_with_query": (("--target", "http://127.0.0.1:18431/v1?key=1"), ("query",)),
    "target_port_80000": (("--target", "http://127.0.0.1:80000"), ("port", "65535")),
    # The embedded mock (10.8)
    "mock_fault_unknown": (("--mock-fault", "foo=0.1"), ("unknown fault", "foo")),
    "mock_fault_rate_above_one": (("--mock-fault", "empty_stream=2"), ("[0, 1]",)),
    "tokenizer_missing": (("--tokenizer", "/nope.json"), ("/nope.json",)),
    # Flags the run would ignore (10.11)
    "rate_with_sweep": (("--profile", "sweep", "--rate", "5"), ("--rate", "sweep")),
    "rate_with_throughput": (("--rate", "5"), ("--rate", "throughput")),
    "concurrency_with_synchronous": (
        ("--profile", "synchronous", "--concurrency", "4"),
        ("--concurrency", "synchronous"),
    ),
    "concurrency_with_constant": (
        ("--profile", "constant", "--rate", "5", "--concurrency", "4"),
        ("--concurrency", "constant"),
    ),
    "sweep_rates_without_sweep": (("--sweep-rates", "3"), ("--sweep-rates", "sweep")),
    "prompt_tokens_with_data": (("--data", "{data}", "--prompt-tokens", "64"), ("--data",)),
    "shared_prefix_with_data": (
        ("--data", "{data}", "--shared-prefix-tokens", "8"),
        ("--shared-prefix-tokens", "--data"),
    ),
    "stream_with_embeddings": (("--endpoint", "embeddings", "--stream"), ("--stream",)),
    "ignore_eos_with_embeddings": (
        ("--endpoint", "embeddings", "--ignore-eos"),
        ("--ignore-eos", "embeddings"),
    ),
    "output_tokens_with_embeddings": (
        ("--endpoint", "embeddings", "--output-tokens", "16"),
        ("--output-tokens", "embeddings"),
    ),
    "documents_with_chat": (("--documents", "4"), ("--documents", "chat", "no documents")),
    "document_tokens_with_embeddings": (
        ("--endpoint", "embeddings", "--document-tokens", "32"),
        ("--document-tokens", "embeddings"),
    ),
    "documents_zero": (
        ("--endpoint", "rerank", "--documents", "0"),
        ("documents", "greater than or equal to 1"),
    ),
    "document_tokens_zero": (
        ("--endpoint", "score", "--document-tokens", "0"),
        ("document_tokens", "at least 1"),
    ),
    "documents_with_data": (
        ("--endpoint", "rerank", "--data", "{data}", "--documents", "4"),
        ("--documents", "--data"),
    ),
    "rerank_data_without_documents": (
        ("--endpoint", "rerank", "--data", "{data}"),
        ("prompts.jsonl, line 1", "no 'documents'"),
    ),
    "mock_flags_with_target": (
        ("--target", "http://127.0.0.1:18431", "--mock-fault", "empty_stream=0.1"),
        ("--mock-fault", "--target"),
    ),
}

CONFIG_FILES: dict[str, bytes] = {
    "binary.toml": b'profile = "synchronous"\nmodel = "\xff\xfe\x00"\n',
    "nul.json": b'{"model": "tiny\\u0000llama"}',
    "surrogate.json": b'{"model": "tiny\\udc80llama"}',
    "infinity.json": b'{"max_seconds": Infinity}',
    "nan.json": b'{"timeout_total": NaN}',
    "boolean.json": b'{"seed": true}',
    "slo.json": b'{"slo": {"ttft_ms": true}}',
}


def prepared(tmp_path: Path, flags: tuple[str, ...]) -> list[str]:
    """The flags with `{tmp}` and `{data}` filled in, and the files they name written."""
    (tmp_path / "a-file").write_text("not a folder\n", encoding="utf-8")
    for name, content in CONFIG_FILES.items():
        (tmp_path / name).write_bytes(content)
    data = tmp_path / "prompts.jsonl"
    data.write_text('{"prompt": "Name three load balancers."}\n', encoding="utf-8")
    return [flag.replace("{tmp}", str(tmp_path)).replace("{data}", str(data)) for flag in flags]


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_input_is_one_error_line_exit_2_and_leaves_no_run_folder(
    tmp_path: Path, case: str
) -> None:
    flags, words = CASES[case]
    work = tmp_path / "work"
    work.mkdir()
    run_dir = tmp_path / "run"
    result = run_assay(
        "run", "--output-dir", run_dir, "--max-requests", "5", "--processes", "1",
        *prepared(work, flags),
    )  # fmt: skip
    line = assert_one_error_line(result, *words)
    assert "sk-SECRET-CANARY" not in result.stdout + result.stderr, line
    assert not run_dir.exists(), sorted(p.name for p in run_dir.iterdir())


def assert_mock_refused(result: CliResult, *words: str) -> None:
    assert_one_error_line(result, *words)
    assert "serving" not in result.stdout


def test_mock_port_80000_is_refused_not_wrapped_around() -> None:
    # 80000 would have been served on 80000 - 65536 = 14464.
    assert_mock_refused(run_assay("mock", "--port", "80000"), "--port 80000", "65535")


def test_mock_on_a_port_in_use_is_one_error_line() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = run_assay("mock", "--host", "127.0.0.1", "--port", str(port), timeout_s=30)
    assert_mock_refused(result, "cannot listen", str(port), "in use")


def test_mock_on_an_address_not_of_this_machine_is_one_error_line() -> None:
    # 192.0.2.1 is reserved for documentation (RFC 5737): binding to it fails locally with
    # "cannot assign requested address", and no packet is ever sent.
    result = run_assay("mock", "--host", "192.0.2.1", "--port", "0", timeout_s=30)
    assert_mock_refused(result, "cannot listen", "192.0.2.1")


def test_mock_with_100000_workers_is_refused() -> None:
    assert_mock_refused(run_assay("mock", "--port", "0", "--workers", "100000"), "--workers")


def test_more_processes_than_cpus_is_a_warning_and_the_run_goes_on(tmp_path: Path) -> None:
    # Issue 10.11: more load processes than CPUs only compete for them; said, not refused.
    processes = usable_cpus() + 1
    result = run_fast(tmp_path, "--max-requests", "6", "--processes", str(processes))
    assert result.exit_code == 0, result.stdout + result.stderr
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith(f"warning: --processes {processes} is more than the"), line
    assert "CPUs" in line
    assert_every_request_accounted(tmp_path)


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (("run", "--shared-prefix-tokens", "1e8"), ("--shared-prefix-tokens", "assay run --help")),
        (("run", "--max-request", "5"), ("--max-request", "--max-requests")),
        (("mock", "--port", "http"), ("--port", "assay mock --help")),
        (("revalidate",), ("Missing argument",)),
    ],
)
def test_a_usage_error_is_one_error_line_too(args: tuple[str, ...], words: tuple[str, ...]) -> None:
    # Flags of the wrong type were a usage box of four lines; now one line like any bad input.
    assert_one_error_line(run_assay(*args), *words)
