"""The informational commands: `assay validators`, `assay mock --help`, `assay --help`,
`assay --version`."""

from __future__ import annotations

import re

from tests.cli.cli_harness import run_assay

from assay import __version__
from assay.core import DiagnosticCode
from assay.mock import FAULTS
from assay.validators import BUILTIN_VALIDATORS


def test_validators_lists_every_diagnostic_code_and_builtin_validator() -> None:
    result = run_assay("validators")
    assert result.exit_code == 0, result.stderr
    words = set(re.findall(r"[a-z_]+", result.stdout))
    missing = [code.value for code in DiagnosticCode if code.value not in words]
    assert missing == []
    assert [b.name for b in BUILTIN_VALIDATORS if b.name not in words] == []
    assert "package.module:name" in result.stdout


def test_mock_help_lists_every_fault_with_its_code() -> None:
    result = run_assay("mock", "--help")
    assert result.exit_code == 0, result.stderr
    text = " ".join(result.stdout.split())  # help text may wrap a description
    for name, info in FAULTS.items():
        assert f"{name} -> {info.code.value}:" in text, name
    assert "--fault" in text
    assert "X-Assay-Fault" in text


def test_help_names_every_command() -> None:
    result = run_assay("--help")
    assert result.exit_code == 0, result.stderr
    for command in ("run", "mock", "validators", "revalidate"):
        assert re.search(rf"^\s*{command}\s", result.stdout, re.MULTILINE), command


def test_run_help_documents_the_exit_codes_and_the_profiles() -> None:
    result = run_assay("run", "--help")
    assert result.exit_code == 0, result.stderr
    text = " ".join(result.stdout.split())
    assert "130" in text
    assert "INVALID" in text
    for profile in ("synchronous", "concurrent", "throughput", "constant", "poisson", "sweep"):
        assert profile in text


def test_version_prints_the_package_version() -> None:
    result = run_assay("--version")
    assert result.exit_code == 0, result.stderr
    assert result.stdout.strip() == f"assay {__version__}"


def test_no_arguments_shows_help_instead_of_running() -> None:
    result = run_assay()
    assert "Usage" in result.stdout + result.stderr
    assert "Traceback" not in result.stderr
