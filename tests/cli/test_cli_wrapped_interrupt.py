"""A Ctrl-C or SIGTERM that a library wraps in an error of its own still ends the command with
exit code 130 and the one "interrupted" line (issue 37.11): a SIGTERM in the first 0.7 s, while
pydantic-core built a model's serializer at import, came out as `SchemaError("Error building
`literal` serializer: KeyboardInterrupt")` and exit 1."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from pathlib import Path

import pytest
from pydantic import TypeAdapter, ValidationError
from pydantic_core import SchemaError, SchemaSerializer, core_schema

import assay.cli.commands
from assay.cli.app import main
from assay.cli.crash import CrashSite
from assay.cli.exit_codes import EXIT_CRASH, EXIT_INTERRUPTED
from assay.cli.guard import guarded, interrupted


class _InterruptedWhileCompared:
    """A literal value: wherever pydantic-core looks at it is where the signal lands."""

    def __hash__(self) -> int:
        raise KeyboardInterrupt

    def __eq__(self, other: object) -> bool:
        raise KeyboardInterrupt

    def __repr__(self) -> str:
        raise KeyboardInterrupt

    def __str__(self) -> str:
        raise KeyboardInterrupt


def wrapped_interrupt() -> SchemaError:
    """The error pydantic-core itself raises when a KeyboardInterrupt hits a serializer build."""
    with pytest.raises(SchemaError, match="KeyboardInterrupt") as raised:
        SchemaSerializer(core_schema.literal_schema([_InterruptedWhileCompared()]))
    return raised.value


def test_pydantics_wrapped_interrupt_is_an_interrupt_not_a_crash(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    error = wrapped_interrupt()

    def body() -> int:
        raise error

    assert guarded(body, CrashSite(folder=tmp_path)) == EXIT_INTERRUPTED
    assert capsys.readouterr().err == ""
    assert list(tmp_path.iterdir()) == [], "an interrupt saved a crash file"


def test_an_error_raised_from_an_interrupt_is_an_interrupt(tmp_path: Path) -> None:
    def body() -> int:
        try:
            raise KeyboardInterrupt
        except KeyboardInterrupt as stop:
            raise RuntimeError("while closing") from stop

    assert guarded(body, CrashSite(folder=tmp_path)) == EXIT_INTERRUPTED


def test_other_errors_stay_crashes(tmp_path: Path) -> None:
    assert not interrupted(RuntimeError("KeyboardInterrupt"))
    schema_error = SchemaError("Error building `literal` serializer: TypeError")
    assert not interrupted(schema_error)
    # Bad input that merely quotes the word is no interrupt.
    with pytest.raises(ValidationError) as bad_input:
        TypeAdapter(int).validate_python("KeyboardInterrupt: ")
    assert not interrupted(bad_input.value)

    def body() -> int:
        raise schema_error

    assert guarded(body, CrashSite(folder=tmp_path)) == EXIT_CRASH


@pytest.fixture
def keep_sigterm() -> Iterator[None]:
    """`main` makes SIGTERM raise KeyboardInterrupt; the test process gets its handler back."""
    previous = signal.getsignal(signal.SIGTERM)
    yield
    signal.signal(signal.SIGTERM, previous)


def test_main_exits_130_when_the_import_of_the_commands_is_interrupted_so(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], keep_sigterm: None
) -> None:
    error = wrapped_interrupt()

    def run_app() -> int:
        raise error

    monkeypatch.setattr(assay.cli.commands, "run_app", run_app)
    with pytest.raises(SystemExit) as ended:
        main()
    assert ended.value.code == EXIT_INTERRUPTED
    assert capsys.readouterr().err == "interrupted\n"


def test_main_lets_a_real_error_of_the_import_through(
    monkeypatch: pytest.MonkeyPatch, keep_sigterm: None
) -> None:
    def run_app() -> int:
        raise SchemaError("Error building `literal` serializer: TypeError")

    monkeypatch.setattr(assay.cli.commands, "run_app", run_app)
    with pytest.raises(SchemaError):
        main()
