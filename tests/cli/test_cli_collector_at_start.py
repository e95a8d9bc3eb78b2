"""The garbage collector is off while the command line starts and on again for a command's work:
every command turns it on before its body, and `assay run` before its load."""

from __future__ import annotations

import gc
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import typer

from assay.cli.guard import exit_guarded
from assay.load.collector import collector_on

# Runs `assay run` through the console entry point with the step's collector block wrapped, so
# the collector's state at the load's start is seen as the load sees it.
_RUN_WATCHED = """
import contextlib, gc, json, sys
import assay.load.collector as collector

seen = []
plain = collector.quiet_collector

@contextlib.contextmanager
def watched():
    seen.append(gc.isenabled())
    with plain():
        yield

collector.quiet_collector = watched
sys.argv = ["assay", *sys.argv[1:]]
try:
    from assay.cli.app import main
    main()
finally:
    print(json.dumps({"at_load": seen, "at_end": gc.isenabled()}))
"""


@pytest.fixture
def collector_off() -> Iterator[None]:
    """The collector off, as `assay.cli.app.main` leaves it; back as it was afterwards (and
    nothing left frozen that was not before)."""
    was = gc.isenabled()
    froze = gc.get_freeze_count() > 0
    gc.disable()
    try:
        yield
    finally:
        if not froze:
            gc.unfreeze()
        if was:
            gc.enable()


def _state_in_body(collector_later: bool) -> bool:
    seen: list[bool] = []

    def body() -> int:
        seen.append(gc.isenabled())
        return 0

    with pytest.raises(typer.Exit):
        exit_guarded(body, collector_later=collector_later)
    return seen[0]


def test_a_commands_body_runs_with_the_collector_on(collector_off: None) -> None:
    assert _state_in_body(collector_later=False) is True


def test_a_commands_body_finds_start_ups_objects_in_the_oldest_generation(
    collector_off: None,
) -> None:
    """What start-up built is moved to the oldest generation as the collector comes back on,
    so the young collections never walk it, and nothing is left frozen."""
    if gc.get_freeze_count():
        pytest.skip("this process froze objects of its own")
    # lists: objects the collector tracks
    built_at_start_up: list[list[int]] = [[] for _ in range(1000)]
    seen: list[tuple[bool, int]] = []

    def body() -> int:
        oldest = {id(held) for held in gc.get_objects(generation=2)}
        seen.append((all(id(one) in oldest for one in built_at_start_up), gc.get_freeze_count()))
        return 0

    with pytest.raises(typer.Exit):
        exit_guarded(body)
    assert seen == [(True, 0)]


def test_collector_on_keeps_a_processs_own_freeze(collector_off: None) -> None:
    gc.freeze()
    frozen = gc.get_freeze_count()
    collector_on()
    assert gc.isenabled()
    assert gc.get_freeze_count() == frozen


_EXIT_WATCHED = """
import atexit, gc, os, sys
# Registered before main's own: called after it (last in, first out) as the interpreter exits.
atexit.register(lambda: os.write(1, f"frozen at exit: {gc.get_freeze_count()}\\n".encode()))
sys.argv = ["assay", "--help"]
from assay.cli.app import main
main()
"""


def test_the_interpreters_exit_finds_every_object_frozen() -> None:
    """The exit's full collections skip what the command left alive (~80 ms after a run)."""
    completed = subprocess.run(
        [sys.executable, "-c", _EXIT_WATCHED],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr
    last = completed.stdout.strip().splitlines()[-1]
    assert last.startswith("frozen at exit: "), last
    assert int(last.removeprefix("frozen at exit: ")) > 10_000


def test_a_body_that_turns_it_on_itself_starts_with_it_off(collector_off: None) -> None:
    assert _state_in_body(collector_later=True) is False


def test_main_gives_its_caller_the_collector_back_after_a_usage_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A usage error ends the command before any body turns the collector on; a process that
    called `main` (a test suite, say) still gets it back on."""
    from assay.cli.app import main

    monkeypatch.setattr(sys, "argv", ["assay", "run", "--no-such-flag"])
    assert gc.isenabled()
    with pytest.raises(SystemExit) as ended:
        main()
    assert ended.value.code == 2
    assert gc.isenabled()


def test_assay_run_loads_with_the_collector_on(tmp_path: Path) -> None:
    completed = subprocess.run(
        [
            sys.executable,
            "-c",
            _RUN_WATCHED,
            "run",
            "--max-requests",
            "3",
            "--output-dir",
            str(tmp_path / "run"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr
    state = json.loads(completed.stdout.strip().splitlines()[-1])
    assert state["at_load"], state  # the load ran in this process
    assert all(state["at_load"]), state
    assert state["at_end"] is True
