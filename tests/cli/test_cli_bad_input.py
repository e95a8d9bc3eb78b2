"""Bad usage or input: exit code 2 and one `error: ...` line on stderr saying what was wrong,
never a traceback, and no load sent."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest
from tests.cli.cli_harness import CliResult, run_assay, run_fast

# Each case: the flags after `assay run`, and words the error line must hold.
FLAG_CASES: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "unknown_profile": (("--profile", "bursty"), ("profile", "synchronous", "sweep")),
    "constant_without_rate": (("--profile", "constant"), ("constant", "needs a rate")),
    "negative_rate": (("--profile", "constant", "--rate", "-1"), ("rate", "greater than 0")),
    "unknown_validator": (("--validator", "no_such_check"), ("unknown validator", "no_such_check")),
    "validator_attribute_missing": (
        ("--validator", "assay.validators:no_such_check"),
        ("cannot load validator", "no_such_check"),
    ),
    "validator_module_missing": (
        ("--validator", "no_such_package.checks:usable"),
        ("no_such_package",),
    ),
    "slo_without_value": (("--slo", "ttft_ms"), ("--slo", "NAME=NUMBER")),
    "slo_not_a_number": (("--slo", "ttft_ms=fast"), ("--slo", "not a number")),
    "unknown_slo": (("--slo", "latency=5"), ("unknown SLO", "latency")),
    "mock_fault_without_rate": (("--mock-fault", "empty_stream"), ("--mock-fault",)),
    # Was accepted and ignored: the run served no load fault at all.
    "mock_load_fault_without_its_load": (
        ("--mock-load-fault", "cut"),
        ("--mock-load-fault needs --mock-fault-past",),
    ),
    "concurrent_without_concurrency": (("--profile", "concurrent"), ("--concurrency",)),
    # A value the run spec refuses names the flag that gave it, not the spec's field.
    "image_format_unknown": (("--image-format", "gif"), ("error: --image-format: ", "'png'")),
    # Crashed (exit 3, an empty measured window) once the mock had started.
    "warmup_filling_the_step": (
        ("--warmup-seconds", "3", "--max-seconds", "3"),
        ("--warmup-seconds 3 leaves nothing of --max-seconds 3 measured",),
    ),
    "warmup_and_cooldown_filling_the_step": (
        ("--warmup-seconds", "1", "--cooldown-seconds", "1", "--max-seconds", "2"),
        ("--warmup-seconds 1 and --cooldown-seconds 1 leave nothing",),
    ),
    # Were accepted and ignored: the run exited 0 without a note.
    "data_column_without_data": (("--data-column", "prompt=q"), ("--data-column", "--data")),
    "image_size_without_images": (("--image-size", "64x64"), ("--image-size", "--images")),
    "image_format_without_images": (("--image-format", "jpeg"), ("--image-format", "--images")),
    "trace_block_tokens_without_trace": (
        ("--trace-block-tokens", "64"),
        ("--trace-block-tokens", "--trace"),
    ),
}


def assert_one_error_line(result: CliResult, *words: str) -> str:
    """Exit code 2, stderr exactly one `error:` line holding `words`, no traceback anywhere."""
    assert result.exit_code == 2, result.stdout + result.stderr
    assert "Traceback" not in result.stderr + result.stdout
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    (line,) = lines
    assert line.startswith("error: "), line
    for word in words:
        assert word in line, (word, line)
    assert "VALID RUN" not in result.stdout
    return line


@pytest.mark.parametrize("case", sorted(FLAG_CASES))
def test_bad_flag_is_one_error_line_and_exit_code_2(tmp_path: Path, case: str) -> None:
    flags, words = FLAG_CASES[case]
    result = run_fast(tmp_path / "run", "--max-requests", "5", "--processes", "1", *flags)
    assert_one_error_line(result, *words)
    assert not (tmp_path / "run" / "report.json").exists()


def test_missing_data_file_is_one_error_line(tmp_path: Path) -> None:
    missing = tmp_path / "prompts.jsonl"
    result = run_fast(tmp_path / "run", "--data", missing, "--processes", "1")
    assert_one_error_line(result, str(missing), "no such prompt file")


def test_trace_that_is_a_pipe_is_named_a_pipe_not_missing(tmp_path: Path) -> None:
    fifo = tmp_path / "trace.jsonl"
    os.mkfifo(fifo)
    result = run_fast(tmp_path / "run", "--profile", "replay", "--trace", fifo)
    assert_one_error_line(result, f"--trace {fifo}: is not a regular file (a named pipe)")


def test_jsonl_data_file_with_a_bad_line_names_the_line(tmp_path: Path) -> None:
    data = tmp_path / "prompts.jsonl"
    data.write_text(
        '{"prompt": "Summarise the attached incident report."}\n'
        '{"prompt": "Translate this sentence into French."}\n'
        '{"prompt": "Write a haiku about load balancers."\n',
        encoding="utf-8",
    )
    result = run_fast(tmp_path / "run", "--data", data, "--processes", "1")
    assert_one_error_line(result, str(data), "line 3")


def test_unknown_key_in_config_file_is_named(tmp_path: Path) -> None:
    config = tmp_path / "assay.toml"
    config.write_text('profile = "synchronous"\nmax-request = 10\n', encoding="utf-8")
    result = run_fast(tmp_path / "run", "--config", config)
    # Named as the file wrote it (issue 20 item 4).
    line = assert_one_error_line(result, str(config), "unknown key max-request;")
    assert "max_requests" in line  # the valid keys are listed, so the typo is easy to fix


def test_unparsable_config_file_is_one_error_line(tmp_path: Path) -> None:
    config = tmp_path / "assay.toml"
    config.write_text('profile = "synchronous\n', encoding="utf-8")
    result = run_fast(tmp_path / "run", "--config", config)
    assert_one_error_line(result, str(config), "not valid")


def test_target_where_nothing_listens_is_no_server_at(tmp_path: Path) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    # The socket is closed: nothing listens on that port any more.
    target = f"http://127.0.0.1:{port}"
    result = run_assay(
        "run", "--target", target, "--output-dir", tmp_path / "run", "--max-requests", "5",
        "--timeout-connect", "2",
    )  # fmt: skip
    assert_one_error_line(result, f"no server at {target}")
    assert not (tmp_path / "run" / "report.json").exists()


def test_revalidate_of_a_directory_without_a_run_is_one_error_line(tmp_path: Path) -> None:
    result = run_assay("revalidate", tmp_path)
    assert_one_error_line(result, "report.json")


def test_revalidate_refuses_a_max_error_rate_a_run_would_refuse(tmp_path: Path) -> None:
    run = tmp_path / "run"
    assert run_fast(run, "--max-requests", "5", "--processes", "1").exit_code == 0
    # Were accepted: -1 judged the run against "-100.0 %", nan was stored as null.
    for rate in ("-1", "nan", "5"):
        result = run_assay("revalidate", run, "--max-error-rate", rate)
        assert_one_error_line(result, "--max-error-rate: ")
        assert not (run / "revalidated").exists(), rate
    assert run_assay("revalidate", run, "--max-error-rate", "1").exit_code == 0


def test_unknown_option_is_a_usage_error(tmp_path: Path) -> None:
    result = run_assay("run", "--max-request", "5", "--output-dir", tmp_path)
    assert result.exit_code == 2
    assert "Traceback" not in result.stderr
    assert "--max-request" in result.stderr
