"""The `assay` command line: the typer app and its commands in the order `assay --help` lists
them (`run`, `mock`, `validators`, `revalidate`, `report`, `records`, `compare`);
`assay.cli.app:main`, the console entry point, imports this module once SIGTERM is handled.

Each command is a module of its own that imports what it runs only when it runs, so
`assay --help` stays fast. How a command ends (its exit code) is `assay.cli.guard`'s.
"""

# Annotations are evaluated here, once, at import (no `from __future__ import annotations`):
# typer reads every flag's annotation at each start, and would otherwise evaluate the strings.

from typing import Annotated, Any

import typer
from typer._click.core import Context as _ClickContext
from typer.core import TyperArgument, TyperCommand

from assay import __version__
from assay.cli.compare_command import compare
from assay.cli.exit_codes import EXIT_PIPE_CLOSED, EXIT_USAGE, EXIT_VALID
from assay.cli.listing import validators
from assay.cli.mock_command import MockCommand, mock
from assay.cli.records_command import records
from assay.cli.report_command import report
from assay.cli.revalidate_command import revalidate
from assay.cli.run_command import RunCommand, run


class CapitalArguments(TyperCommand):
    """A command that names its arguments as its usage line and help say them everywhere else
    (`RUN_DIR`, `RUN_DIRS...`), where typer would print `{run_dir}` and `run_dir`."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for param in self.params:
            if isinstance(param, TyperArgument) and param.metavar is None:
                many = "..." if param.nargs != 1 else ""
                param.metavar = (param.name or "").upper() + many

    # typer vendors click; its Context is the supertype's own type.
    def collect_usage_pieces(self, ctx: _ClickContext) -> list[str]:
        pieces = [self.options_metavar] if self.options_metavar else []
        for param in self.get_params(ctx):
            if isinstance(param, TyperArgument):
                name = param.metavar or (param.name or "").upper()
                pieces.append(name if param.required else f"[{name}]")
            else:
                pieces.extend(param.get_usage_pieces(ctx))
        return pieces


app = typer.Typer(
    name="assay",
    help="Benchmark OpenAI-compatible LLM servers, counting only what was really served.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"assay {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option("--version", callback=_version, is_eager=True, help="Print the version."),
    ] = False,
) -> None:
    """Benchmark OpenAI-compatible LLM servers, counting only what was really served."""


app.command(cls=RunCommand)(run)
app.command(cls=MockCommand)(mock)
app.command()(validators)
app.command(cls=CapitalArguments)(revalidate)
app.command(cls=CapitalArguments)(report)
app.command(cls=CapitalArguments)(records)
app.command(cls=CapitalArguments)(compare)


def run_app() -> int:
    """Run the command line; a usage error (an unknown flag, a value of the wrong type) is one
    `error:` line and exit code 2, like every other bad input. Returns the exit code.

    A reader of standard output that leaves while typer itself prints (`assay run --help |
    head -1`) ends the command with 141, as a command's own guard does (`assay.cli.guard`):
    typer would exit 1, INVALID RUN for `assay run`.
    """
    import sys

    from typer._click.exceptions import NoArgsIsHelpError, UsageError

    from assay.cli.stdout_reader import forget_reader_left, give_up_stdout

    forget_reader_left()
    streams = sys.stdout, sys.stderr
    try:
        code = app(standalone_mode=False)
    except SystemExit as stop:
        if not isinstance(stop.__context__, BrokenPipeError):
            raise
        # typer wrapped both streams to silence their last flush; they get their own back.
        sys.stdout, sys.stderr = streams
        give_up_stdout()
        code = EXIT_PIPE_CLOSED
    except NoArgsIsHelpError as error:
        typer.echo(error.format_message(), err=True)
        code = EXIT_USAGE
    except UsageError as error:
        command = error.ctx.command_path if error.ctx is not None else "assay"
        typer.echo(f"error: {error.format_message()} (see `{command} --help`)", err=True)
        code = EXIT_USAGE
    return code if isinstance(code, int) else EXIT_VALID


__all__ = ["CapitalArguments", "app", "run_app"]
