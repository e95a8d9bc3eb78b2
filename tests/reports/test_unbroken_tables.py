"""No number or name is ever broken across lines (issue 38 item 14): at 80 columns a sweep's
Steps table with an SLO printed `228.2⏎6`, and `assay validators` `stream_without_finish_re⏎
ason`. A table whose words fit wraps at spaces only; one whose words do not is printed row by
row."""

from __future__ import annotations

import io

import pytest
from rich.console import Console
from rich.table import Table

from assay.reports.unclipped import unclipped
from assay.validators import BUILTIN_VALIDATORS
from tests.cli.test_cli_piped_output import run_piped

HEADERS = (
    "step", "offered", "dispatched\nreq/s", "usable\nreq/s", "TTFT\np50", "TTFT\np99",
    "ITL\np50", "ITL\np99", "error\nrate", "goodput\nreq/s", "stopped\nby",
)  # fmt: skip
ROWS = [
    ("1", "synchronous", "12.41", "12.40", "79.53", "228.26", "8.04", "9.95", "0.0 %", "12.40",
     "max requests"),
    ("2", "throughput (c=64)", "189.72", "188.03", "1,048.77", "2,283.61", "21.50", "189.72",
     "0.9 %", "101.66", "max requests"),
]  # fmt: skip


def render(table: Table, width: int) -> str:
    console = Console(file=io.StringIO(), width=width, record=True, color_system=None)
    console.print(unclipped(table))
    return console.export_text()


def steps_like_table() -> Table:
    table = Table(title="Steps (latency in ms over completed requests)")
    for header in HEADERS:
        table.add_column(header, justify="right", no_wrap=True)
    for row in ROWS:
        table.add_row(*row)
    return table


@pytest.mark.parametrize("width", [200, 120, 80, 60, 40])
def test_every_number_of_a_wide_table_stays_whole(width: int) -> None:
    text = render(steps_like_table(), width)
    words = text.split()
    for row in ROWS:
        for cell in row:
            for word in cell.split():
                assert word in words, (word, width, text)
    assert max(len(line.rstrip()) for line in text.splitlines()) <= width
    assert "…" not in text


def test_a_table_too_wide_for_its_words_is_printed_row_by_row() -> None:
    text = render(steps_like_table(), 80)
    assert "TTFT p99" in text  # each value under its column's name
    assert "228.26" in text.split()
    assert "┃" not in text  # not a table


def test_a_table_whose_words_fit_stays_a_table_wrapping_at_spaces() -> None:
    table = Table()
    table.add_column("name", no_wrap=True)
    table.add_column("what it checks")
    table.add_row(
        "stream_without_finish_reason", "a chat/completions stream that ended with [DONE]"
    )
    text = render(table, 60)
    assert "stream_without_finish_reason" in text.split()
    assert "┃" in text


@pytest.mark.parametrize("columns", ["80", "60", "40"])
def test_validators_at_80_columns_never_break_a_name_issue_38(columns: str) -> None:
    result = run_piped("validators", columns=columns)
    assert result.returncode == 0, result.stderr
    words = result.stdout.split()
    for builtin in BUILTIN_VALIDATORS:
        assert builtin.name in words, (builtin.name, columns)
        assert builtin.code in words, (builtin.code, columns)
