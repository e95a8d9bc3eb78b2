"""Tables that never cut a number or a name, on any console width.

rich fits a table to the console by cutting cells with "…"; a number cut that way ("60…") or a
name cut that way ("stream_without_finish_r…", the name one must type) is lost information. A
table passed through `unclipped` wraps its cells instead: at spaces, and inside a word only when
a word is wider than the console allows.
"""

from __future__ import annotations

from rich.table import Table


def unclipped(table: Table) -> Table:
    """`table`, its columns set to wrap (fold) rather than cut their cells.

    >>> import io
    >>> from rich.console import Console
    >>> table = Table()
    >>> table.add_column("validator", no_wrap=True)
    >>> table.add_row("stream_without_finish_reason")
    >>> console = Console(file=io.StringIO(), width=16, record=True)
    >>> console.print(unclipped(table))
    >>> "…" in console.export_text()
    False
    """
    for column in table.columns:
        column.no_wrap = False
        column.overflow = "fold"
    return table
