"""`--validator mypkg.checks:name` run from the folder that holds `mypkg` finds it, as
`python -m` would (issue 20 item 8: the README's own example failed with "no module named
'mypkg'")."""

from __future__ import annotations

from pathlib import Path

from tests.cli.cli_harness import FAST, run_assay

CHECKS = """\
from returns.result import Result, Success

from assay import GenerationResponse, UnusableResponse


def accept_all(response: GenerationResponse) -> Result[GenerationResponse, UnusableResponse]:
    return Success(response)
"""


def test_a_validator_package_in_the_working_folder_loads(tmp_path: Path) -> None:
    package = tmp_path / "mypkg"
    package.mkdir()
    (package / "__init__.py").write_text("", encoding="utf-8")
    (package / "checks.py").write_text(CHECKS, encoding="utf-8")
    result = run_assay(
        "run", *FAST, "--max-requests", "4", "--processes", "1", "--mock-fault", "http_500=0",
        "--validator", "mypkg.checks:accept_all", "--output-dir", tmp_path / "run",
        cwd=tmp_path,
    )  # fmt: skip
    assert result.exit_code == 0, result.stdout + result.stderr
    assert "mypkg.checks:accept_all" in result.stdout
