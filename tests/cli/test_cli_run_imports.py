"""`assay run` against a server imports no aiohttp in any of its processes (issue 35): every
request, the side ones included (model list, proxy probe, metrics scrapes), goes out on assay's
own transport, and aiohttp's import was a sixth of a short run's wall time. Only the mock serves
with aiohttp, and here it runs in a process of its own. A plain metrics page is read without
`prometheus_client` either."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from tests.cli.cli_harness import ASSAY, RUN_TIMEOUT_S, assay_env, assay_mock


def imported_by_run(url: str, output_dir: Path) -> tuple[int, list[str], str]:
    """Exit code, the top-level modules every process of `assay run` imported (Python's own
    import log, `PYTHONPROFILEIMPORTTIME`, which child interpreters inherit), and stdout."""
    process = subprocess.Popen(
        [
            str(ASSAY),
            "run",
            "--target",
            url,
            "--endpoint",
            "chat",
            "--output-tokens",
            "16",
            "--prompt-tokens",
            "32",
            "--max-requests",
            "10",
            "--output-dir",
            str(output_dir),
        ],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**assay_env(), "PYTHONPROFILEIMPORTTIME": "1"},
        start_new_session=True,
    )
    try:
        stdout, stderr = process.communicate(timeout=RUN_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        raise
    modules = [
        line.rsplit("|", 1)[1].strip()
        for line in stderr.splitlines()
        if line.startswith("import time:") and line.count("|") == 2
    ]
    return process.returncode, modules, stdout


def test_a_run_against_a_server_imports_no_aiohttp(tmp_path: Path) -> None:
    with assay_mock("--output-tokens", "16") as url:
        exit_code, modules, stdout = imported_by_run(url, tmp_path / "run")
    assert exit_code == 0, stdout
    # The log is real: it holds the CLI, the transport and the server-metrics cross-check.
    assert {"assay.cli.app", "assay.h1.fetch", "assay.server_metrics.scrape"} <= set(modules)
    assert "Server metrics" in stdout  # the scrapes did run
    assert (tmp_path / "run" / "report.html").is_file()
    assert [name for name in modules if name.split(".")[0] == "aiohttp"] == []
    # A plain metrics page is read without the Prometheus package (and its http.server).
    assert [name for name in modules if name.split(".")[0] == "prometheus_client"] == []
    # A run that sends no image does not load Pillow.
    assert [name for name in modules if name.split(".")[0] == "PIL"] == []


def test_reading_reports_imports_no_metrics_parser() -> None:
    """`assay report` and `assay compare` read stored figures: the exposition parser (and the
    http.server and urllib it brings) is imported at a run's first scrape, not with them."""
    probe = "import assay.reports, sys; print(sorted(m for m in sys.modules if 'prometheus' in m))"
    found = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, env=assay_env()
    )
    assert found.stdout.strip() == "[]", found.stdout
