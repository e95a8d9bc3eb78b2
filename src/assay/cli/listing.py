"""`assay validators`: the built-in validators and the diagnostic codes, for people."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from assay.core import CODE_MEANINGS, stage_of
from assay.validators import BUILTIN_VALIDATORS


def print_validators(console: Console | None = None) -> None:
    """Print the validator table and the code table."""
    console = console or Console()
    validators = Table(
        title="Built-in validators (use with --validator NAME)", title_justify="left"
    )
    validators.add_column("name")
    validators.add_column("code")
    validators.add_column("what it checks")
    for builtin in BUILTIN_VALIDATORS:
        validators.add_row(builtin.name, builtin.code, builtin.description)
    console.print(validators)
    codes = Table(title="Diagnostic codes (stable; in report.json)", title_justify="left")
    codes.add_column("stage")
    codes.add_column("code")
    codes.add_column("meaning")
    for code, meaning in CODE_MEANINGS.items():
        codes.add_row(stage_of(code), code, meaning)
    console.print(codes)
    console.print(
        "A custom validator is any callable taking a GenerationResponse and returning "
        "Result[GenerationResponse, UnusableResponse]: --validator package.module:name"
    )
