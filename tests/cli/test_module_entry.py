"""`python -m assay` is the same command line as the `assay` script."""

from __future__ import annotations

import subprocess
import sys


def test_python_dash_m_assay_lists_the_commands() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "assay", "--help"], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert "run" in done.stdout
    assert "compare" in done.stdout
