"""What `assay run --target` checks before the load: a pasted endpoint path, a server without
`/v1/models`, a wrong endpoint, and Ctrl-C while the server is silent (issues 8, 9 and 10)."""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path

from tests.backend.backend_loopback import serve_raw
from tests.backend.chat_only import serve_chat_only
from tests.cli.cli_harness import ASSAY, assay_env, assert_every_request_accounted
from tests.cli.test_cli_secrets import run_assay_async

SMALL = ("--processes", "1", "--profile", "synchronous", "--max-requests", "5")


async def test_target_with_the_endpoint_path_is_accepted_and_said(tmp_path: Path) -> None:
    async with serve_chat_only() as server:
        result = await run_assay_async(
            "run", "--target", f"{server.url}/v1/chat/completions", *SMALL,
            "--output-dir", tmp_path / "run", env=assay_env(),
        )  # fmt: skip
    assert result.exit_code == 0, result.stdout + result.stderr
    assert "dropped /v1/chat/completions from the URL" in result.stdout
    report = assert_every_request_accounted(tmp_path / "run")
    assert report.totals.outcomes.completed == 5


async def test_server_without_models_route_runs_when_the_model_is_given(tmp_path: Path) -> None:
    async with serve_chat_only(models=False) as server:
        result = await run_assay_async(
            "run", "--target", server.url, "--model", "chat-only", *SMALL,
            "--output-dir", tmp_path / "run", env=assay_env(),
        )  # fmt: skip
    assert result.exit_code == 0, result.stdout + result.stderr
    # The probe, the empty request that asks whether a proxy answers (issue 38), the five
    # measured.
    assert server.hits["/v1/chat/completions"] == 7


async def test_wrong_endpoint_stops_before_the_load_naming_the_right_one(tmp_path: Path) -> None:
    async with serve_chat_only() as server:
        result = await run_assay_async(
            "run", "--target", server.url, "--endpoint", "completions",
            "--processes", "1", "--max-requests", "500", "--output-dir", tmp_path / "run",
            env=assay_env(),
        )  # fmt: skip
    assert result.exit_code == 2
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith("error: the probe request got HTTP 404")
    assert "--endpoint chat (/v1/chat/completions)" in line
    assert server.hits["/v1/completions"] == 1


async def test_ctrl_c_while_waiting_for_models_exits_130(tmp_path: Path) -> None:
    arrived = asyncio.Event()

    async def silent(writer: asyncio.StreamWriter, release: asyncio.Event) -> None:
        arrived.set()
        await release.wait()

    async with serve_raw(silent) as server:
        process = await asyncio.create_subprocess_exec(
            str(ASSAY), "run", "--target", server.url, "--processes", "1",
            "--output-dir", str(tmp_path / "run"),
            stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE, env=assay_env(), start_new_session=True,
        )  # fmt: skip
        try:
            # Bounds of the test, not timing claims: the request arrives, then Ctrl-C.
            async with asyncio.timeout(30):
                await arrived.wait()
            process.send_signal(signal.SIGINT)
            async with asyncio.timeout(15):
                _, stderr = await process.communicate()
        finally:
            if process.returncode is None:
                process.kill()
                await process.wait()
    assert process.returncode == 130, stderr.decode()
    assert "Traceback" not in stderr.decode()
