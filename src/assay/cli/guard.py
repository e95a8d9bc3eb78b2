"""How a command ends: the guard every command's body runs in (the codes are
`assay.cli.exit_codes`).

Every error meant for the user (`AssayError`) is one line on stderr and exit code 2; Ctrl-C is
exit code 130; a crash of assay itself is one line saying where its traceback was saved, and
exit code 3 (Python's own 1 would read as INVALID RUN), after which a run's records are merged
and its partial report written, marked crashed; a reader of standard output that left is exit
code 141 (`assay.cli.stdout_reader`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, NoReturn

from assay.cli.exit_codes import EXIT_CRASH, EXIT_INTERRUPTED, EXIT_PIPE_CLOSED, EXIT_USAGE

if TYPE_CHECKING:
    from assay.cli.crash import CrashSite


def guarded(body: Callable[[], int], site: CrashSite | None = None) -> int:
    """Run a command's body: bad input is one `error:` line and exit 2, Ctrl-C exit 130, and
    anything else a crash (exit 3) whose traceback is saved, not printed."""
    import typer

    from assay.cli.stdout_reader import give_up_stdout, reader_left, stdout_closed
    from assay.errors import AssayError
    from assay.printable import printable

    try:
        code = body()
    except AssayError as error:
        # The message may quote a server's answer: shown, never obeyed by the terminal.
        typer.echo(f"error: {printable(str(error), newlines=True)}", err=True)
        return EXIT_USAGE
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED  # `assay.cli.app.main` says "interrupted" for every exit 130
    except BrokenPipeError as error:
        if (site is None or site.folder is None) and stdout_closed():
            give_up_stdout()  # `assay report RUN | head`: not a crash
            return EXIT_PIPE_CLOSED
        return _crashed(error, site)
    except Exception as error:
        if interrupted(error):
            return EXIT_INTERRUPTED
        return _crashed(error, site)
    # A console whose reader left went quiet and let the command finish (a run writes its
    # report); the exit code says that what it printed was not all read (a Ctrl-C still 130).
    return EXIT_PIPE_CLOSED if reader_left() and code != EXIT_INTERRUPTED else code


def _crashed(error: Exception, site: CrashSite | None) -> int:
    """Save the traceback, say where, and keep what a run wrote (merged, with a partial report
    marked crashed)."""
    import typer

    from assay.cli.crash import CrashSite, crash_line, merge_after_crash, save_crash

    site = site or CrashSite()
    saved = save_crash(error, site)
    typer.echo(crash_line(error, saved), err=True)
    for line in merge_after_crash(site, saved):
        typer.echo(line, err=True)
    return EXIT_CRASH


def interrupted(error: BaseException) -> bool:
    """Whether `error` is a Ctrl-C or SIGTERM, however it was wrapped on its way out.

    A `KeyboardInterrupt` raised inside a library's native code can come out as another
    error: pydantic-core, building a model's serializer when a module is imported, turns it
    into `SchemaError("Error building `literal` serializer: KeyboardInterrupt: ")`, with no
    cause attached. Such an error, or one whose cause or context is a `KeyboardInterrupt`, is
    a stop asked for, not a crash.

    >>> interrupted(KeyboardInterrupt())
    True
    >>> interrupted(ValueError("KeyboardInterrupt"))
    False
    """
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, KeyboardInterrupt) or _wraps_an_interrupt(current):
            return True
        current = current.__cause__ or current.__context__
    return False


def _wraps_an_interrupt(error: BaseException) -> bool:
    """A pydantic-core `SchemaError` whose message reports the `KeyboardInterrupt` it
    swallowed (`...serializer:\n  KeyboardInterrupt: `); a model's schema, not input."""
    kind = type(error)
    return (
        kind.__module__.split(".", 1)[0] == "pydantic_core"
        and kind.__name__ == "SchemaError"
        and "KeyboardInterrupt:" in str(error)
    )


def exit_guarded(
    body: Callable[[], int], site: CrashSite | None = None, *, collector_later: bool = False
) -> NoReturn:
    """Run a command's body `guarded` and end the command with its exit code.

    The garbage collector, off while the command line starts (`assay.cli.app.main`), is on
    again before the body runs (`assay.load.collector.collector_on`), or, with
    `collector_later`, once the body turns it on itself (`assay run`, after its imports and
    before its load).
    """
    import typer

    from assay.load.collector import collector_on

    if not collector_later:
        collector_on()
    raise typer.Exit(guarded(body, site))
