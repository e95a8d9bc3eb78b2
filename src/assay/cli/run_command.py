"""`assay run`: its options, one per row of `assay.cli.run_flags`, and the guard its steps
(`assay.cli.run_steps`) run in; the exit code says the outcome.

typer reads a command's options from its function's signature: `run`'s is built from the
rows. What the run needs is imported only once it runs, so `assay --help` stays fast.
"""

import inspect
from typing import Any

import typer
from typer._click.core import Context as _ClickContext
from typer._click.formatting import HelpFormatter
from typer._coercion import RuntimeParam, build_runtime_param
from typer.core import TyperCommand, TyperOption

from assay.cli.guard import exit_guarded
from assay.cli.run_flags import RUN_FLAGS, Flag


class RunCommand(TyperCommand):
    """`assay run`, whose help names every member of each closed set (`ClosedSet`), read from
    the set only when the help is shown, and whose options are coerced only when given
    (`_WhenGiven`)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for param in self.params:
            # typer's own slot for the coercion it builds lazily; a typer without it keeps its
            # own way (slower, same values).
            if isinstance(param, TyperOption) and getattr(param, "_runtime_param", 0) is None:
                param._runtime_param = _WhenGiven(param)  # type: ignore[assignment]  # duck type

    # typer vendors click; its Context and HelpFormatter are the supertype's own types.
    def format_help(self, ctx: _ClickContext, formatter: HelpFormatter) -> None:
        rows = {row.name: row for row in RUN_FLAGS}
        for param in self.params:
            row = rows.get(param.name or "")
            if row is not None and isinstance(param, TyperOption):
                param.help = row.help_text()
                param.metavar = row.metavar_text()
        super().format_help(ctx, formatter)


class _WhenGiven:
    """typer's coercion of one option, built when the option is given: typer otherwise builds
    a pydantic adapter for each of `run`'s hundred options at every start (tens of ms), when
    an option not given is None (or empty, if repeatable) whatever its type."""

    __slots__ = ("_built", "_option")

    def __init__(self, option: TyperOption) -> None:
        self._option = option
        self._built: RuntimeParam | None = None

    def coerce(self, value: object, param: TyperOption, ctx: _ClickContext) -> object:
        if value is None:
            return () if param.multiple or param.nargs == -1 else None
        built = self._built
        if built is None:
            built = self._built = build_runtime_param(self._option.type_descriptor)
        return built.coerce(value, param=param, ctx=ctx)


def _parameter(row: Flag) -> inspect.Parameter:
    """`row` as a parameter typer reads: an option of its type, or None when not given."""
    option = typer.Option(
        None,
        row.spelling,
        help=row.help if isinstance(row.help, str) else "",
        metavar=row.metavar if isinstance(row.metavar, str) else None,
        rich_help_panel=row.panel,
    )
    return inspect.Parameter(
        row.name, inspect.Parameter.KEYWORD_ONLY, default=option, annotation=row.kind | None
    )


def run(**flags: object) -> None:
    """Run a benchmark and write report.json, records.jsonl and summary.csv.

    Exit code 0: a valid run; 1: an INVALID run (error rate above --max-error-rate, nothing
    completed, the client fell behind past --max-not-sent-rate, or a load process was lost);
    2: bad usage or input, or files that cannot be written; 3: assay crashed (a bug; the
    traceback is saved); 130: interrupted by Ctrl-C or SIGTERM (the partial report is still
    written); 141: standard output closed by its reader (the run finishes; its verdict is in
    report.json).
    """
    from assay.cli.crash import CrashSite
    from assay.cli.run_steps import run_from_flags

    site = CrashSite()
    exit_guarded(lambda: run_from_flags(flags, site), site, collector_later=True)


run.__signature__ = inspect.Signature(  # type: ignore[attr-defined]  # read by typer
    [_parameter(row) for row in RUN_FLAGS], return_annotation=None
)

__all__ = ["RunCommand", "run"]
