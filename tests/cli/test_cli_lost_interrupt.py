"""A stop signal whose `KeyboardInterrupt` is lost still stops the run: Python prints an
interrupt raised where it cannot propagate (a finalizer, code a C extension calls back, as
pydantic-core does while it builds a schema) as "Exception ignored" and goes on. A run whose
imports swallowed SIGTERM so ran its whole 20 s; the signal is now remembered, and the run's stop
flag starts set."""

from __future__ import annotations

import signal
import sys
from collections.abc import Iterator

import pytest

from assay.engine.interrupt import STOPPED_EARLY, sigint_as_flag, stop_raising


@pytest.fixture
def unstopped() -> Iterator[None]:
    STOPPED_EARLY.raised = False
    try:
        yield
    finally:
        STOPPED_EARLY.raised = False


class _Finalized:
    """An object whose finalizer meets the stop signal: where an interrupt is lost."""

    def __del__(self) -> None:
        stop_raising(signal.SIGTERM, None)


def test_a_stop_signal_raises_like_ctrl_c_and_is_remembered(unstopped: None) -> None:
    with pytest.raises(KeyboardInterrupt):
        stop_raising(signal.SIGTERM, None)
    assert STOPPED_EARLY.is_set()


def test_an_interrupt_lost_in_a_finalizer_sets_the_runs_stop_flag(
    unstopped: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    lost: list[type[BaseException]] = []
    monkeypatch.setattr(sys, "unraisablehook", lambda info: lost.append(info.exc_type))
    _Finalized()  # dropped at once: its finalizer's KeyboardInterrupt goes nowhere
    assert lost == [KeyboardInterrupt]
    with sigint_as_flag() as flag:
        assert flag.is_set()
    assert not STOPPED_EARLY.is_set()  # taken by the run that honoured it


def test_a_run_after_an_unstopped_start_is_not_stopped(unstopped: None) -> None:
    with sigint_as_flag() as flag:
        assert not flag.is_set()
