"""The console every command prints on: nothing it prints can drive the terminal.

Server text reaches the console in many places (error examples, the model id, `/metrics`
notes, a tampered report.json read by `assay compare`); rather than trust each of them, a
render hook passes every printed segment through `printable`, so a control character is shown
as its escape wherever it came from. The console's own styling and cursor control, produced
after the hook, are left as they are.

A console whose reader left (`assay run | head -3`) goes quiet and lets the command finish:
rich's own console would end the process with exit code 1, INVALID RUN for `assay run`, and
skip what the command still had to do (write the run's report).
"""

from __future__ import annotations

from collections.abc import Iterator

from rich.console import Console, ConsoleOptions, ConsoleRenderable, RenderHook
from rich.segment import Segment

from assay.cli.stdout_reader import give_up_stdout
from assay.printable import printable


class _Shown:
    """A renderable whose text segments are made printable."""

    __slots__ = ("_inner",)

    def __init__(self, inner: ConsoleRenderable) -> None:
        self._inner = inner

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> Iterator[Segment]:
        for segment in console.render(self._inner, options):
            if segment.control or segment.text.isprintable():
                yield segment
            else:
                yield Segment(printable(segment.text, newlines=True), segment.style)


class _QuietOnceUnread(Console):
    """A console that stops printing once its reader has left (`assay.cli.stdout_reader`)."""

    def on_broken_pipe(self) -> None:
        self.quiet = True
        give_up_stdout()


class _PrintableOnly(RenderHook):
    def process_renderables(self, renderables: list[ConsoleRenderable]) -> list[ConsoleRenderable]:
        return [_Shown(renderable) for renderable in renderables]


def terminal_console(*, highlight: bool = True, width: int | None = None) -> Console:
    """A rich `Console` that prints no control character of the text it is given.

    >>> import io
    >>> console = terminal_console(highlight=False)
    >>> console.file = io.StringIO()
    >>> console.print("\\x1b[2J\\x1b]0;owned\\x1b\\\\")
    >>> console.file.getvalue()
    '\\\\x1b[2J\\\\x1b]0;owned\\\\x1b\\\\\\n'
    """
    console = _QuietOnceUnread(highlight=highlight, width=width)
    console.push_render_hook(_PrintableOnly())
    return console


__all__ = ["terminal_console"]
