"""Server text reaches the console shown, never obeyed; files keep it exactly (issue 21.5)."""

from __future__ import annotations

from pathlib import Path

import orjson
from tests.cli.cli_harness import assay_env
from tests.cli.hostile_text import CONTROLS, PAYLOAD, serve_hostile_text
from tests.cli.test_cli_secrets import run_assay_async

from assay.printable import printable


def controls_in(text: str) -> list[str]:
    return [repr(char) for char in CONTROLS if char in text]


async def test_escape_sequences_from_the_server_are_shown_not_obeyed(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    async with serve_hostile_text() as url:
        result = await run_assay_async(
            "run", "--target", url, "--server-metrics", f"{url}/metrics",
            "--max-requests", "4", "--processes", "1", "--profile", "synchronous",
            "--output-tokens", "8", "--prompt-tokens", "16", "--output-dir", run_dir,
            env=assay_env(),
        )  # fmt: skip
    assert result.exit_code == 1, result.stdout + result.stderr
    assert controls_in(result.stdout) == []
    assert controls_in(result.stderr) == []
    # The evidence is still there to read, escaped: the errors table and the metrics note.
    assert "\\x1b]52;c;" in result.stdout
    assert "not Prometheus metrics" in result.stdout
    # Files keep the server's exact text, escaped by JSON.
    lines = (run_dir / "records.jsonl").read_bytes().splitlines()
    messages = {orjson.loads(line)["message"] for line in lines}
    assert any(PAYLOAD in message for message in messages), messages


async def test_an_error_line_quoting_the_server_is_printable(tmp_path: Path) -> None:
    # A `--server-metrics` URL whose first scrape fails stops the run, quoting the parser.
    async with serve_hostile_text(sound_first_scrape=False) as url:
        result = await run_assay_async(
            "run", "--target", url, "--server-metrics", f"{url}/metrics",
            "--max-requests", "1", "--processes", "1",
            "--output-dir", tmp_path / "run",
            env=assay_env(),
        )  # fmt: skip
    assert result.exit_code == 2, result.stdout + result.stderr
    assert result.stderr.count("error:") == 1, result.stderr
    assert controls_in(result.stdout + result.stderr) == []
    assert "not Prometheus metrics" in result.stderr


def test_printable_shows_every_control_as_its_escape() -> None:
    shown = printable(PAYLOAD + "\x00\x7f\x85\u2028\ud800")
    assert controls_in(shown) == []
    assert shown.isprintable()
    assert "\\x1b[1;32mVALID RUN\\x1b[0m" in shown
