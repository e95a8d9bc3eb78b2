"""The help texts and the docs say what the command line does: the commands they name exist,
the codes they quote are diagnostic codes, and the lists and limits they give are the code's."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import typer
from typer.core import TyperGroup
from typer.testing import CliRunner

from assay.backend.readiness import RETRY_STATUSES
from assay.cli.commands import app
from assay.config.limits import SMALL_RUN_RATE, SMALL_RUN_REQUESTS
from assay.core import DiagnosticCode

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
PAGES = [README, *sorted((ROOT / "docs").glob("*.md"))]


def help_of(*command: str) -> str:
    """`assay COMMAND --help`, its words joined by single spaces (the wrapping undone)."""
    result = CliRunner().invoke(app, [*command, "--help"])
    assert result.exit_code == 0, result.output
    return " ".join(result.output.split())


def usage_of(*command: str) -> str:
    result = CliRunner().invoke(app, [*command, "--help"])
    return result.output.splitlines()[0]


def commands() -> set[str]:
    """The names of `assay`'s commands."""
    group = typer.main.get_command(app)
    assert isinstance(group, TyperGroup)
    return set(group.commands)


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.name)
def test_every_command_a_page_names_exists(page: Path) -> None:
    named = set(re.findall(r"`assay ([a-z][a-z-]*)", page.read_text(encoding="utf-8")))
    assert named <= commands(), named - commands()


def test_the_readme_revalidate_example_quotes_diagnostic_codes() -> None:
    text = " ".join(README.read_text(encoding="utf-8").split())
    changes = re.findall(r"errored under another code \(\d+ (\S+) -> (\S+?)\)", text)
    assert changes
    codes = {str(code) for code in DiagnosticCode}
    for before, now in changes:
        assert {before, now} <= codes, (before, now)


def test_wait_ready_help_and_readme_name_the_statuses_retried() -> None:
    statuses = "/".join(str(status) for status in sorted(RETRY_STATUSES))
    assert f"(refused, {statuses}, no model yet)" in help_of("run")
    readme = " ".join(README.read_text(encoding="utf-8").split())
    assert (
        f"`--wait-ready SECONDS` retries a server that is still starting (refused, {statuses},"
        in (readme)
    )


def test_processes_help_gives_the_limits_of_a_run_kept_to_one_process() -> None:
    assert (
        f"1 for --max-requests up to {SMALL_RUN_REQUESTS} at no more than "
        f"{SMALL_RUN_RATE:,.0f} req/s" in help_of("run")
    )


@pytest.mark.parametrize(
    ("command", "arguments"),
    [
        ("report", "RUN_DIR"),
        ("records", "RUN_DIR"),
        ("revalidate", "RUN_DIR"),
        ("compare", "RUN_DIRS..."),
    ],
)
def test_usage_names_arguments_in_capitals(command: str, arguments: str) -> None:
    assert usage_of(command).endswith(f" {command} [OPTIONS] {arguments}")
    assert f"Arguments: {arguments} " in help_of(command)
