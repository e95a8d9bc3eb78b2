"""A disk that fills up during a run stops it with one `OutputError`, whichever process meets it
first, and mid-run as well as when a shard is closed (issue 9 item 6). `/dev/full` answers
every write with ENOSPC, so a shard opened on it is a full disk without any mount (a shard is
created exclusively, never through a symlink, so the test hands the sinks its own opener)."""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import IO

import pytest

from assay.backend import BackendSettings
from assay.benchmark.shard_sink import ShardSinkFactory
from assay.core import Endpoint
from assay.data import FixedCount, SyntheticSource
from assay.engine import BenchmarkPlan, Concurrent, Constraints, run_benchmark
from assay.errors import OutputError
from assay.file_writes import open_new
from assay.validators import default_chain


def plan(max_requests: int, processes: int) -> BenchmarkPlan:
    return BenchmarkPlan(
        profile=Concurrent(streams=8),
        constraints=Constraints(max_requests=max_requests, max_seconds=30),
        processes=processes,
        source=SyntheticSource(
            model="m", prompt_tokens=FixedCount(value=8), output_tokens=FixedCount(value=4)
        ),
        backend=BackendSettings(base_url="http://127.0.0.1:9"),  # nothing listens there
        validator_factory=partial(default_chain, Endpoint.chat),
    )


def open_full_disk_at(full: Path, path: Path) -> IO[bytes]:
    """Shards as assay opens them, but the one at `full` on a disk with no space left."""
    return open("/dev/full", "wb") if path == full else open_new(path)


@pytest.mark.parametrize(
    ("full_process", "processes", "max_requests"),
    [
        (0, 1, 8),  # this process, when its shard is closed
        (0, 1, 1_200),  # this process, mid-run (a shard writes every 256 records)
        (1, 2, 8),  # a load process, when its shard is closed
        (1, 2, 1_200),  # a load process, mid-run
    ],
)
def test_a_full_disk_is_one_output_error_naming_the_shard(
    tmp_path: Path, full_process: int, processes: int, max_requests: int
) -> None:
    full = ShardSinkFactory(tmp_path).shard_path(step=0, process=full_process)
    sinks = ShardSinkFactory(tmp_path, open_shard=partial(open_full_disk_at, full))
    with pytest.raises(OutputError) as raised:
        run_benchmark(plan(max_requests, processes), sinks)
    message = str(raised.value)
    assert message.startswith(f"cannot write records to {full}: No space left on device")
    assert "Traceback" not in message
