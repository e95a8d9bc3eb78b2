"""While a step dispatches, set-up's objects are frozen and young collections are rare; after
it, the process's collector is exactly as it was."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest

from assay.core import GenerationResponse
from assay.load.collector import STEP_THRESHOLD_0, quiet_collector
from assay.load.step_runner import StepWork
from assay.records import RequestRecord
from assay.records.sink import StepContext
from assay.spec.constraints import Constraints
from assay.spec.load import Constant
from assay.testing import FakeClock
from tests.load.test_step_runner import FakeServer, drive_step


@dataclass
class CollectorWatch:
    """A sink that notes the collector's state each time a record arrives."""

    context: StepContext
    seen: list[tuple[tuple[int, int, int], int]] = field(default_factory=list)

    def add(self, record: RequestRecord[GenerationResponse]) -> None:
        self.seen.append((gc.get_threshold(), gc.get_freeze_count()))

    def close(self) -> list[tuple[tuple[int, int, int], int]]:
        return self.seen


@pytest.fixture
def default_collector() -> Iterator[tuple[int, int, int]]:
    """The test starts with nothing frozen and gets the collector back as it found it."""
    threshold = gc.get_threshold()
    gc.unfreeze()
    yield threshold
    gc.set_threshold(*threshold)
    gc.unfreeze()


async def test_a_step_dispatches_with_setup_frozen_and_rare_young_collections(
    default_collector: tuple[int, int, int],
) -> None:
    clock = FakeClock()
    server = FakeServer(clock)
    work = StepWork(0, Constant(rate=10), Constraints(max_requests=5), 1, 0, 1, clock.now_ns())
    stepped = await drive_step(work, clock, resolve=server.resolve, sink_factory=CollectorWatch)
    seen = stepped.summary
    assert len(seen) == 5
    for threshold, frozen in seen:
        assert threshold == (STEP_THRESHOLD_0, *default_collector[1:])
        assert frozen > 0
    assert gc.get_threshold() == default_collector
    assert gc.get_freeze_count() == 0


def test_overlapping_blocks_restore_the_collector_once_the_last_ends(
    default_collector: tuple[int, int, int],
) -> None:
    outer = quiet_collector()
    inner = quiet_collector()
    outer.__enter__()
    inner.__enter__()
    outer.__exit__(None, None, None)
    assert gc.get_threshold()[0] == STEP_THRESHOLD_0
    assert gc.get_freeze_count() > 0
    inner.__exit__(None, None, None)
    assert gc.get_threshold() == default_collector
    assert gc.get_freeze_count() == 0


def test_objects_the_process_froze_itself_stay_frozen(
    default_collector: tuple[int, int, int],
) -> None:
    # Frozen objects are not in the generations `gc.get_objects()` lists; unfreezing puts them
    # back. (The freeze count itself may drop meanwhile: a frozen object can still be freed.)
    mine = [["frozen by the process"]]
    gc.freeze()
    with quiet_collector():
        assert gc.get_threshold()[0] == STEP_THRESHOLD_0
    assert not any(tracked is mine for tracked in gc.get_objects())
    assert gc.get_threshold() == default_collector
