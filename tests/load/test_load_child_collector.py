"""A load process imports the run path with the garbage collector off and loads with it on
(`assay.load.collector.collector_on`, whose moving of the imports' objects to the oldest
generation tests/cli/test_cli_collector_at_start.py checks)."""

from __future__ import annotations

import gc
import os
import pickle
import signal
import sys
from collections.abc import Coroutine, Iterator
from multiprocessing.connection import Pipe

import pytest

from assay.engine import load_child, load_process

_seen: dict[str, bool] = {}


def _audit(event: str, args: tuple[object, ...]) -> None:
    if event == "import" and args[0] == "assay.engine.load_process" and "importing" not in _seen:
        _seen["importing"] = gc.isenabled()


sys.addaudithook(_audit)


@pytest.fixture
def collector_restored() -> Iterator[None]:
    was, froze = gc.isenabled(), gc.get_freeze_count() > 0
    try:
        yield
    finally:
        if not froze:
            gc.unfreeze()
        if was:
            gc.enable()


def test_the_entry_point_imports_the_body_with_the_collector_off(
    collector_restored: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The body counts as not imported yet, so the entry point imports it again here.
    monkeypatch.delitem(sys.modules, "assay.engine.load_process")
    _seen.clear()
    parent, child = Pipe(duplex=True)
    with parent, child:
        parent.send(None)  # the parent gave up before the plan: the body returns at once
        load_child.main(os.dup(child.fileno()))  # the body closes its copy
    assert _seen == {"importing": False}


def test_the_body_turns_the_collector_on_before_its_load(
    collector_restored: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The load itself stands in: what matters is the collector's state as it starts.
    seen: dict[str, bool] = {}

    def the_load(coroutine: Coroutine[object, object, None]) -> None:
        seen["enabled"] = gc.isenabled()
        coroutine.close()

    monkeypatch.setattr(load_process, "run_event_loop", the_load)
    handlers = {number: signal.getsignal(number) for number in (signal.SIGINT, signal.SIGTERM)}
    gc.disable()
    parent, child = Pipe(duplex=True)
    try:
        with parent, child:
            parent.send((0, list(sys.path)))
            parent.send_bytes(pickle.dumps((None, None)))
            load_process.child_main(child)
    finally:
        for number, handler in handlers.items():
            signal.signal(number, handler)
    assert seen == {"enabled": True}
