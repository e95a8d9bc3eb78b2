"""`assay validators`: the built-in validators and the diagnostic codes, for people."""

# Annotations are evaluated here, once, at import (no `from __future__ import annotations`):
# typer reads every flag's annotation at each start, and would otherwise evaluate the strings.

from typing import Annotated

import typer

from assay.cli.exit_codes import EXIT_VALID
from assay.cli.guard import exit_guarded


def validators(
    validator: Annotated[
        list[str] | None,
        typer.Option(
            metavar="MODULE:ATTR",
            help="Also list the custom diagnostic codes this validator's module defines "
            "(repeatable).",
        ),
    ] = None,
) -> None:
    """List the built-in validators and every diagnostic code with its meaning."""

    def body() -> int:
        from rich.table import Table

        from assay.cli.console import output_console
        from assay.core import CODE_MEANINGS, stage_of
        from assay.reports.unclipped import unclipped
        from assay.validators import BUILTIN_VALIDATORS, custom_codes_of

        console = output_console()
        # Each `package.module:name` is loaded as `assay run --validator` would, and the
        # `CustomCode`s its module defines are listed after the built-in codes.
        custom = {spec: custom_codes_of(spec) for spec in validator or ()}
        table = Table(title="Built-in validators (use with --validator NAME)", title_justify="left")
        table.add_column("name")
        table.add_column("code")
        table.add_column("what it checks")
        for builtin in BUILTIN_VALIDATORS:
            table.add_row(builtin.name, builtin.code, builtin.description)
        console.print(unclipped(table))
        codes = Table(title="Diagnostic codes (stable; in report.json)", title_justify="left")
        codes.add_column("stage")
        codes.add_column("code")
        codes.add_column("meaning")
        for code, meaning in CODE_MEANINGS.items():
            codes.add_row(stage_of(code), code, meaning)
        console.print(unclipped(codes))
        if custom:
            loaded = Table(title="Custom codes of the named validators", title_justify="left")
            loaded.add_column("validator")
            loaded.add_column("stage")
            loaded.add_column("code")
            loaded.add_column("meaning")
            for spec, defined in custom.items():
                if not defined:
                    loaded.add_row(spec, "", "(none)", "")
                for custom_code in defined:
                    loaded.add_row(spec, custom_code.stage, custom_code.value, custom_code.meaning)
            console.print(unclipped(loaded))
        console.print(
            "A custom validator is any callable taking a GenerationResponse and returning "
            "Result[GenerationResponse, UnusableResponse]: --validator package.module:name. "
            "It may report its own code, a namespaced CustomCode('myorg.name', meaning=...) "
            "defined at module level; `assay validators --validator package.module:name` lists it."
        )
        return EXIT_VALID

    exit_guarded(body)
