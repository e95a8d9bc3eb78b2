"""`assay run --data rows.jsonl --target URL` whose rows name their model: a model the server
does not list stops the run before any request, in one `error:` line naming the row; rows
naming what it serves run; a server without `/v1/models` is taken at its word."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from tests.backend.chat_only import serve_chat_only
from tests.cli.cli_harness import ASSAY, assay_env, assay_mock, read_record_lines, run_assay

SMALL = ("--max-requests", "4", "--profile", "synchronous", "--output-tokens", "8")


def _data(tmp_path: Path, models: list[str | None]) -> Path:
    path = tmp_path / "rows.jsonl"
    path.write_text(
        "".join(
            json.dumps({"prompt": f"say {n}", **({} if model is None else {"model": model})}) + "\n"
            for n, model in enumerate(models)
        ),
        encoding="utf-8",
    )
    return path


def test_a_row_naming_a_model_the_server_does_not_list_stops_the_run(tmp_path: Path) -> None:
    data = _data(tmp_path, [None, "assay-mock", "nope", "nope"])
    received = tmp_path / "received.jsonl"
    with assay_mock("--ttft-ms", "0", "--itl-ms", "0", "--record-requests", received) as url:
        result = run_assay(
            "run", "--target", url, "--data", data, *SMALL, "--output-dir", tmp_path / "out"
        )
    assert result.exit_code == 2, result.stdout + result.stderr
    errors = [line for line in result.stderr.splitlines() if line.strip()]
    assert errors == [
        f"error: models named by --data rows not served at {url}: 'nope' (first at line 3); "
        "it serves: 'assay-mock'"
    ], result.stderr
    # Before any request: not even the probe reached the server.
    assert received.read_text(encoding="utf-8") == ""
    assert not (tmp_path / "out" / "records.jsonl").exists()


def test_rows_naming_only_served_models_run(tmp_path: Path) -> None:
    data = _data(tmp_path, [None, "assay-mock", None, "assay-mock"])
    run_dir = tmp_path / "out"
    with assay_mock("--ttft-ms", "0", "--itl-ms", "0") as url:
        result = run_assay(
            "run", "--target", url, "--model", "assay-mock", "--data", data, *SMALL,
            "--output-dir", run_dir,
        )  # fmt: skip
    assert result.exit_code == 0, result.stdout + result.stderr
    assert len(read_record_lines(run_dir)) == 4


async def test_a_server_without_the_listing_route_runs(tmp_path: Path) -> None:
    data = _data(tmp_path, ["anything", "else"])
    run_dir = tmp_path / "out"
    async with serve_chat_only(models=False) as server:
        process = await asyncio.create_subprocess_exec(
            str(ASSAY), "run", "--target", server.url, "--model", "chat-only", "--data", data,
            "--max-requests", "2", "--profile", "synchronous", "--no-stream",
            "--output-dir", run_dir,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, env=assay_env(),
        )  # fmt: skip
        stdout, stderr = await asyncio.wait_for(process.communicate(), 90)
    assert process.returncode == 0, stdout.decode() + stderr.decode()
    assert server.hits["/v1/models"] >= 1  # asked, and answered 404
    assert [line["model"] for line in read_record_lines(run_dir)] == ["anything", "else"]
