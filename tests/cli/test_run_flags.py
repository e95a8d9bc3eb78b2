"""`assay run`'s options come from one table (`assay.cli.run_flags`): its help lists them in
the table's order, and a help that names a closed set names every member of the set."""

from __future__ import annotations

import re
from typing import get_args

import pytest
from tests.cli.cli_harness import run_assay

from assay.cli.run_flags import RUN_FLAGS, ClosedSet, Flag, key_choices
from assay.config import FIELD_NAMES
from assay.spec.endpoint import Endpoint
from assay.spec.flat import flag_of
from assay.spec.load import ProfileKind

CLOSED_SET_ROWS = [
    row
    for row in RUN_FLAGS
    if isinstance(row.help, ClosedSet) or isinstance(row.metavar, ClosedSet)
]


@pytest.fixture(scope="module")
def run_help() -> str:
    result = run_assay("run", "--help")
    assert result.exit_code == 0, result.stderr
    return result.stdout


def squeezed(text: str) -> str:
    """`text` without whitespace: the help wraps lines wherever the terminal width says."""
    return "".join(text.split())


def test_the_table_has_closed_sets() -> None:
    spellings = {row.spelling for row in CLOSED_SET_ROWS}
    assert {"--endpoint", "--profile", "--ramp-up", "--image-format", "--slo"} <= spellings
    # Metavars that once copied their set by hand.
    assert {
        "--model-mix",
        "--capacity-axis",
        "--capacity-arrivals",
        "--mock-load-fault",
    } <= spellings


@pytest.mark.parametrize("row", CLOSED_SET_ROWS, ids=lambda row: row.spelling)
def test_every_closed_set_help_names_every_member(row: Flag, run_help: str) -> None:
    closed = row.help if isinstance(row.help, ClosedSet) else row.metavar
    assert isinstance(closed, ClosedSet)
    members = closed.members()
    assert members
    shown = f"{row.metavar_text() or ''} {row.help_text()}"
    assert [member for member in members if member not in shown] == []
    assert squeezed(shown) in squeezed(run_help)


def test_endpoint_help_names_every_endpoint_including_transcriptions(run_help: str) -> None:
    # The hand-written list once left out `transcriptions`.
    line = squeezed(run_help).split("--endpoint", 1)[1].split("--model", 1)[0]
    assert [e.value for e in Endpoint if e.value not in line] == []
    assert "transcriptions" in line


def test_profile_help_names_every_profile(run_help: str) -> None:
    line = squeezed(run_help).split("--profile", 1)[1].split("--rate", 1)[0]
    assert [kind for kind in get_args(ProfileKind) if kind not in line] == []


def test_engine_help_names_every_engine() -> None:
    (engine,) = [row for row in RUN_FLAGS if row.key == "engine"]
    assert [name for name in key_choices("engine") if name not in engine.help_text()] == []


def test_help_lists_every_flag_in_the_tables_order(run_help: str) -> None:
    listed = re.findall(r"^ {2}(--[\w-]+)", run_help, re.MULTILINE)
    assert listed == [row.spelling.split("/")[0] for row in RUN_FLAGS] + ["--help"]


def test_a_key_set_by_two_flags_is_named_by_the_one_that_takes_a_value() -> None:
    assert flag_of("server_metrics") == "--server-metrics"
    assert flag_of("headers") == "--header"
    assert flag_of("probe") == "--no-probe"
    assert flag_of("max_requests") == "--max-requests"


def test_messages_name_every_key_by_its_flag_in_the_table() -> None:
    for key in FIELD_NAMES:
        rows = [row for row in RUN_FLAGS if row.key == key]
        row = next((row for row in rows if row.given is None), rows[0])
        assert flag_of(key) == row.spelling.split("/")[0], key


def test_the_tables_keys_are_the_config_file_keys() -> None:
    assert {row.key for row in RUN_FLAGS if row.key is not None} == FIELD_NAMES
