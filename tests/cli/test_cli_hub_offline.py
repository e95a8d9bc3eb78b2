"""`--data hf:NAME` with no hub reachable fails at once with one line (issue 20 item 8: 35 s of
hub retry lines came before the error). The hub here is a loopback port nothing listens on."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

from tests.backend.backend_loopback import unused_port_url
from tests.cli.cli_harness import ASSAY, FAST, assay_env


def test_a_hub_dataset_without_a_reachable_hub_is_one_quick_error(tmp_path: Path) -> None:
    env = {**assay_env(), "HF_ENDPOINT": unused_port_url(), "HF_HOME": str(tmp_path / "hf")}
    env.pop("HF_HUB_OFFLINE", None)
    started = time.monotonic()
    result = subprocess.run(
        [str(ASSAY), "run", *FAST[:4], "--data", "hf:someone/chats", "--max-requests", "2",
         "--processes", "1", "--output-dir", str(tmp_path / "run")],
        capture_output=True, text=True, env=env, timeout=120, check=False,
        stdin=subprocess.DEVNULL,
    )  # fmt: skip
    elapsed = time.monotonic() - started
    assert result.returncode == 2, result.stdout + result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: hf:someone/chats: no Hugging Face hub reachable (")
    assert "connection refused" in lines[0].lower()
    assert elapsed < 30  # not half a minute of retries
    assert os.environ.get("HF_HUB_OFFLINE") is None  # the test process is untouched
