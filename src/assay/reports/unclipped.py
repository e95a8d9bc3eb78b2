"""Tables that never cut or break a number or a name, on any console width.

rich fits a table to the console by cutting cells with "…", or, told to fold, by breaking a
word across lines; a number cut or broken that way ("60…", "228.2⏎6") or a name ("stream_without_
finish_re⏎ason", the name one must type) is lost information. A table passed through `unclipped`
wraps its cells at spaces only; when even that does not fit (its columns' longest words add up to
more than the console's width), it is printed as one block per row instead, each cell on its
own line under its column's name (issue 38).
"""

from __future__ import annotations

from collections.abc import Iterator

from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, RenderableType
from rich.measure import Measurement
from rich.padding import Padding
from rich.table import Column, Table
from rich.text import Text


class Unbroken:
    """A table printed whole: as a table when its words fit the width, else row by row."""

    __slots__ = ("table", "whole")

    def __init__(self, table: Table, whole: frozenset[int] = frozenset()) -> None:
        self.table = table
        # The columns whose cells are never wrapped, even at a space ("12.5 %", "max <=64").
        self.whole = whole

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> Iterator[object]:
        table = self.table
        if _fit_columns(table, console, options, self.whole):
            yield table
        else:
            yield from _row_blocks(table, options.max_width)

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        return Measurement.get(console, options, self.table)


def _fit_columns(
    table: Table, console: Console, options: ConsoleOptions, whole: frozenset[int]
) -> bool:
    """Give each column of `table` a width no narrower than its longest word (its longest cell
    for the columns in `whole`), so that rich wraps cells at spaces only; False when those
    alone are wider than the console."""
    columns = table.columns
    if not columns:
        return True
    for column in columns:
        column.width = None
    shortest = [
        _words_width(column, widest=index not in whole) for index, column in enumerate(columns)
    ]
    natural = [
        max(low, _words_width(column, widest=False))
        for column, low in zip(columns, shortest, strict=True)
    ]
    # What borders and padding take: the table's width with every column one cell wide.
    for column in columns:
        column.width = 1
    overhead = Measurement.get(console, options.update_width(10**6), table).maximum - len(columns)
    available = options.max_width - overhead
    for column in columns:
        column.width = None
    if sum(natural) <= available:
        return True
    if sum(shortest) > available:
        return False
    excess = sum(natural) - available
    room = [high - low for high, low in zip(natural, shortest, strict=True)]
    total_room = sum(room)
    widths = [
        high - (excess * spare + total_room - 1) // total_room
        for high, spare in zip(natural, room, strict=True)
    ]
    for column, width, low in zip(columns, widths, shortest, strict=True):
        column.width = max(width, low)
    return True


def _words_width(column: Column, *, widest: bool) -> int:
    """The widest word (`widest`) or the widest line of a column's header and cells."""
    found = 0
    for cell in (column.header, *column.cells):
        for line in _plain(cell).splitlines():
            parts = line.split() if widest else [line]
            found = max(found, *(cell_len(part) for part in parts), 0)
    return found


def _plain(cell: RenderableType) -> str:
    if isinstance(cell, Text):
        return cell.plain
    if isinstance(cell, str):
        return Text.from_markup(cell).plain
    return ""


def unclipped(table: Table) -> Unbroken:
    """`table`, its cells wrapping at spaces, printed row by row where a word would not fit.

    >>> import io
    >>> from rich.console import Console
    >>> table = Table()
    >>> table.add_column("validator", no_wrap=True)
    >>> table.add_column("checks")
    >>> table.add_row("stream_without_finish_reason", "a stream ends with a finish reason")
    >>> console = Console(file=io.StringIO(), width=30, record=True)
    >>> console.print(unclipped(table))
    >>> text = console.export_text()
    >>> "…" in text, "stream_without_finish_reason" in text.split()
    (False, True)
    """
    whole = frozenset(index for index, column in enumerate(table.columns) if column.no_wrap)
    for column in table.columns:
        column.no_wrap = False
        # Folds only a word wider than its column, which `_fit_columns` rules out.
        column.overflow = "fold"
    return Unbroken(table, whole)


def _row_blocks(table: Table, width: int) -> Iterator[RenderableType]:
    """The table's title, then each row as a block of "name  value" lines (a blank line
    between rows; each value on a line of its own below its name where they do not fit side by
    side), the caption last."""
    if table.title:
        yield Text.from_markup(table.title) if isinstance(table.title, str) else table.title
    names = [_header_text(column.header) for column in table.columns]
    columns = [list(column.cells) for column in table.columns]
    widest_name = max((cell_len(name) for name in names), default=0)
    widest_word = max((_words_width(column, widest=True) for column in table.columns), default=0)
    side_by_side = widest_name + 2 + widest_word <= width
    for row in range(table.row_count):
        if row:
            yield Text("")
        block = Table.grid(padding=(0, 2, 0, 0) if side_by_side else 0)
        block.add_column(no_wrap=side_by_side, overflow="fold")
        if side_by_side:
            block.add_column(overflow="fold")
        for name, cells in zip(names, columns, strict=True):
            cell = cells[row] if row < len(cells) else ""
            if cell == "":
                continue
            shown = Text(name, style="bold")
            if side_by_side:
                block.add_row(shown, cell)
            else:
                block.add_row(shown)
                block.add_row(Padding(cell, (0, 0, 0, 2)))
        yield block
    if table.caption:
        yield Text.from_markup(table.caption) if isinstance(table.caption, str) else table.caption


def _header_text(header: RenderableType) -> str:
    """A column's header on one line ("usable\\nreq/s" -> "usable req/s")."""
    text = header.plain if isinstance(header, Text) else str(header)
    return " ".join(text.split())


__all__ = ["Unbroken", "unclipped"]
