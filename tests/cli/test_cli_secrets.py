"""No credential is ever written or printed (issue 9, items 1-3): the API key, auth-like and
user-marked headers and a URL password stay out of records.jsonl, report.json and the console,
even when the server echoes them into every kind of error."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from tests.cli.cli_harness import ASSAY, CliResult, assay_env, assert_every_request_accounted
from tests.cli.hostile_echo import serve_hostile_echo

API_KEY = "sk-SECRET-CANARY-0f9e8d7c6b5a4f3e2d1c"
CUSTOM_KEY = "xk-CUSTOM-CANARY-77aa55bb33cc"
MARKED = "tenant-CANARY-4242"
PASSWORD = "pw-CANARY-1357"
# The first characters of each: a key cut by a cap must not survive either.
HEADS = [secret[:10] for secret in (API_KEY, CUSTOM_KEY, MARKED, PASSWORD)]

RUN_LIMIT_S = 90.0


async def run_assay_async(*args: str | Path, env: dict[str, str]) -> CliResult:
    """`assay ARGS` as a subprocess without blocking the loop that serves the hostile server."""
    process = await asyncio.create_subprocess_exec(
        str(ASSAY),
        *map(str, args),
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=env,
        start_new_session=True,
    )
    try:
        async with asyncio.timeout(RUN_LIMIT_S):
            stdout, stderr = await process.communicate()
    except TimeoutError:
        process.kill()
        await process.wait()
        raise AssertionError(f"assay ran past {RUN_LIMIT_S} s") from None
    assert process.returncode is not None
    return CliResult(process.returncode, stdout.decode(), stderr.decode())


def leaks(text: str) -> list[str]:
    return [head for head in HEADS if head in text]


async def test_echoed_credentials_reach_no_file_and_no_console(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    env = {**assay_env(), "HOSTILE_KEY": API_KEY}
    async with serve_hostile_echo() as url:
        target = url.replace("http://", f"http://bench:{PASSWORD}@")
        result = await run_assay_async(
            "run", "--target", target, "--api-key-env", "HOSTILE_KEY",
            "--header", f"X-Api-Key: {CUSTOM_KEY}", "--header", f"X-Tenant: {MARKED}",
            "--secret-header", "X-Tenant", "--profile", "concurrent", "--concurrency", "2",
            "--max-requests", "24", "--processes", "1", "--output-tokens", "8",
            "--prompt-tokens", "16", "--output-dir", run_dir,
            env=env,
        )  # fmt: skip
    assert result.exit_code in (0, 1), result.stdout + result.stderr
    report = assert_every_request_accounted(run_dir)
    codes = {code.value for code in report.totals.errors_by_code}
    # Every hostile mode was met, so every path that builds evidence was exercised.
    assert {"inband_error", "sse_error_event", "invalid_json", "http_status"} <= codes, codes
    assert "stream_interrupted" in codes or "truncated_stream" in codes, codes
    records = (run_dir / "records.jsonl").read_text(encoding="utf-8")
    # The echo did reach the records, masked: the test would pass vacuously otherwise.
    assert "**********" in records
    for name in ("records.jsonl", "report.json", "summary.csv"):
        assert leaks((run_dir / name).read_text(encoding="utf-8")) == [], name
    assert leaks(result.stdout) == []
    assert leaks(result.stderr) == []


async def test_url_password_stays_out_of_the_error_line(tmp_path: Path) -> None:
    env = {k: v for k, v in assay_env().items() if k != "OPENAI_API_KEY"}
    result = await run_assay_async(
        "run", "--target", f"http://bench:{PASSWORD}@127.0.0.1:9", "--max-requests", "1",
        "--processes", "1", "--output-dir", tmp_path / "run",
        env=env,
    )  # fmt: skip
    assert result.exit_code == 2
    assert "bench:**********@127.0.0.1:9" in result.stderr
    assert leaks(result.stdout + result.stderr) == []


async def test_authorization_header_flag_is_sent_and_never_shown(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    env = {k: v for k, v in assay_env().items() if k != "OPENAI_API_KEY"}
    async with serve_hostile_echo() as url:
        result = await run_assay_async(
            "run", "--target", url, "--header", f"Authorization: Bearer {API_KEY}",
            "--max-requests", "6", "--processes", "1", "--profile", "synchronous",
            "--output-dir", run_dir,
            env=env,
        )  # fmt: skip
    assert result.exit_code in (0, 1), result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    report_text = (run_dir / "report.json").read_text(encoding="utf-8")
    assert '"Authorization": "**********"' in report_text
    for name in ("records.jsonl", "report.json"):
        assert leaks((run_dir / name).read_text(encoding="utf-8")) == [], name
    assert leaks(result.stdout + result.stderr) == []


def test_named_api_key_variable_that_is_unset_is_an_error(tmp_path: Path) -> None:
    from tests.cli.cli_harness import run_fast

    os.environ.pop("ASSAY_TEST_UNSET_KEY", None)
    result = run_fast(tmp_path / "run", "--api-key-env", "ASSAY_TEST_UNSET_KEY")
    assert result.exit_code == 2
    lines = result.stderr.strip().splitlines()
    assert lines[-1] == (
        "error: --api-key-env ASSAY_TEST_UNSET_KEY: the environment variable is not set"
    )
    assert "Traceback" not in result.stderr


def test_header_with_a_line_break_is_one_error_line(tmp_path: Path) -> None:
    from tests.cli.cli_harness import run_fast

    result = run_fast(tmp_path / "run", "--header", f"X-Api-Key: {API_KEY}\r\nX-Evil: 1")
    assert result.exit_code == 2
    assert (
        result.stderr.strip()
        == "error: --header: header X-Api-Key: the value holds a line break (CR or LF)"
    )
    assert leaks(result.stdout + result.stderr) == []
