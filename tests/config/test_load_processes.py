"""How many load processes a run starts when --processes is not given."""

from __future__ import annotations

import pytest

from assay.config import limits
from assay.spec.run import RunConfig


@pytest.mark.parametrize(
    ("given", "cpus", "expected"),
    [
        ({}, 8, 7),  # the embedded mock keeps its one worker
        ({"mock_workers": 3}, 8, 5),
        ({"mock_workers": 2}, 2, 1),  # at least one process
        ({"target": "http://127.0.0.1:8000"}, 8, 4),  # a server on this machine: half
        ({"target": "http://localhost:8000"}, 2, 1),
        ({"target": "http://[::1]:8000"}, 1, 1),
        ({"target": "http://gpu-box:8000"}, 8, 8),  # elsewhere: every CPU
        ({"target": "http://10.0.0.7:8000"}, 2, 2),
        ({"target": "http://127.0.0.1:8000", "processes": 2}, 8, 2),  # asked for
        ({"target": "http://gpu-box:8000", "max_requests": 10}, 8, 1),  # a small run
    ],
)
def test_default_load_processes_leave_a_server_on_this_machine_its_cpus(
    monkeypatch: pytest.MonkeyPatch, given: dict[str, object], cpus: int, expected: int
) -> None:
    monkeypatch.setattr(limits, "usable_cpus", lambda: cpus)
    assert limits.load_processes(RunConfig.model_validate(given)) == expected
