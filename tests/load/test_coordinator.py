"""Load processes: this one and fresh interpreters with no helper process; how a child fails.

The runs target a port where nothing listens (every request is a quick connect error), so no
server is needed: these tests are about the processes, not the load.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from functools import partial
from pathlib import Path

import orjson
import psutil  # type: ignore[import-untyped]  # no stubs installed; only cmdline() is used
import pytest

from assay.backend import BackendSettings
from assay.core import Endpoint, GenerationResponse
from assay.data import FixedCount, RequestSource, SyntheticSource
from assay.data.trace import TraceConfig, load_trace
from assay.engine import (
    BenchmarkPlan,
    Constant,
    Constraints,
    LoadProcessError,
    Profile,
    ProgressSnapshot,
    StepContext,
    counting_sink,
    run_benchmark,
    start_load_processes,
)
from assay.errors import ConfigError
from assay.records import RequestRecord
from assay.spec.load import Replay
from assay.validators import default_chain


def two_process_plan(
    constraints: Constraints,
    profile: Profile | None = None,
    source: RequestSource | None = None,
    **options: float,
) -> BenchmarkPlan:
    """A plan of two slices (constant 50/s of synthetic prompts unless `profile` and `source`
    say otherwise) whose target does not listen: every request fails fast, so only the
    accounting is under test."""
    return BenchmarkPlan(
        profile=profile or Constant(rate=50),
        constraints=constraints,
        processes=2,
        source=source
        or SyntheticSource(
            model="m", prompt_tokens=FixedCount(value=8), output_tokens=FixedCount(value=4)
        ),
        backend=BackendSettings(base_url="http://127.0.0.1:9"),  # nothing listens there
        validator_factory=partial(default_chain, Endpoint.chat),
        seed=3,
        **options,
    )


def trace_source(path: Path, times_ms: Sequence[float]) -> RequestSource:
    """A plain trace written to `path`, one prompt at each of `times_ms`, as `--trace` reads it."""
    rows = ({"timestamp": ms, "prompt": f"prompt {i}"} for i, ms in enumerate(times_ms))
    path.write_bytes(b"".join(orjson.dumps(row) + b"\n" for row in rows))
    return load_trace(TraceConfig(path=path, model="m"))


class MainModuleSink:
    """Reports which module a load process runs as its `__main__`, and whether it re-ran the
    parent's (multiprocessing's spawn loads that copy as `__mp_main__`; otherwise the name is
    only an alias of `__main__`)."""

    def add(self, record: RequestRecord[GenerationResponse]) -> None:
        pass

    def close(self) -> tuple[str | None, bool]:
        spec = sys.modules["__main__"].__spec__
        rerun = (
            sys.modules.get("__mp_main__", sys.modules["__main__"]) is not sys.modules["__main__"]
        )
        return (None if spec is None else spec.name), rerun


def main_module_sink(context: StepContext) -> MainModuleSink:
    return MainModuleSink()


def failing_sink(context: StepContext) -> MainModuleSink:
    if context.process == 1:  # the child; process 0 is this one
        raise RuntimeError(f"shard directory for process {context.process} is not writable")
    return MainModuleSink()


def vanishing_sink(context: StepContext) -> MainModuleSink:
    if context.process == 1:
        os._exit(3)
    return MainModuleSink()


def test_a_load_process_runs_the_entry_module_and_not_the_parents_main() -> None:
    result = run_benchmark(two_process_plan(Constraints(max_requests=4)), main_module_sink)
    [step] = result.steps
    # Process 0 is this one (pytest's main); process 1 is the child.
    assert step.sink_results[1] == ("assay.engine.load_child", False)


def test_two_processes_are_this_one_and_a_single_child() -> None:
    seen: list[list[str]] = []

    def list_children(_: ProgressSnapshot) -> None:
        seen.append([" ".join(child.cmdline()) for child in psutil.Process().children()])

    plan = two_process_plan(Constraints(max_seconds=0.6))
    result = run_benchmark(plan, counting_sink, on_progress=list_children)
    assert result.steps[0].totals.dispatched > 0
    assert seen, "no progress report in 0.6 s"
    for commands in seen:
        [command] = commands
        assert "-m assay.engine.load_child" in command


def test_a_failing_sink_factory_raises_load_process_error_with_the_childs_traceback() -> None:
    with pytest.raises(LoadProcessError) as raised:
        run_benchmark(two_process_plan(Constraints(max_requests=4)), failing_sink)
    message = str(raised.value)
    assert "Traceback" in message
    assert "is not writable" in message


def test_a_load_process_that_exits_without_a_word_is_a_lost_slice_of_a_finished_step() -> None:
    result = run_benchmark(two_process_plan(Constraints(max_requests=4)), vanishing_sink)
    assert result.degraded
    [step] = result.steps
    [lost] = step.lost_processes
    assert lost.process == 1
    assert lost.reason == "load process 1 exited with code 3"
    assert lost.scheduled == 2  # indices 1 and 3 of the 4 were its slice
    assert step.totals.dispatched == 2  # process 0 ran its own slice to the end


def test_replay_slices_report_what_they_owed_and_the_step_adds_them_up(tmp_path: Path) -> None:
    # Issue 24: replay slices reported no `scheduled`, so the step had none either.
    trace = trace_source(tmp_path / "trace.jsonl", [0, 20, 40, 60, 80, 100])
    result = run_benchmark(two_process_plan(Constraints(), Replay(), trace), counting_sink)
    [step] = result.steps
    assert step.scheduled == 6  # each slice owed its 3, the whole trace
    assert step.totals.dispatched == 6
    assert step.not_sent == 0
    assert [counts.total for counts in step.sink_results] == [3, 3]


def test_a_lost_replay_slice_owed_its_share_of_the_trace(tmp_path: Path) -> None:
    trace = trace_source(tmp_path / "trace.jsonl", [0, 20, 40, 60, 80, 100])
    plan = two_process_plan(Constraints(max_requests=4), Replay(), trace)
    [step] = run_benchmark(plan, vanishing_sink).steps
    [lost] = step.lost_processes
    assert lost.scheduled == 2  # indices 1 and 3 of the 4 were its slice
    assert step.scheduled == step.totals.dispatched == 2


def test_a_sink_factory_of_the_running_script_is_refused_before_any_load() -> None:
    def script_sink(context: StepContext) -> MainModuleSink:
        return MainModuleSink()

    # What a function defined in a script run as `python script.py` looks like.
    script_sink.__module__ = "__main__"
    with pytest.raises(ConfigError, match=r"script_sink is defined in the script being run"):
        run_benchmark(two_process_plan(Constraints(max_requests=4)), script_sink)


def test_load_processes_started_ahead_run_the_plan_and_account_for_every_request() -> None:
    with start_load_processes(2) as started:
        result = run_benchmark(
            two_process_plan(Constraints(max_requests=6)), main_module_sink, started=started
        )
    [step] = result.steps
    assert step.totals.dispatched == 6
    assert step.totals.dispatched == step.totals.completed + step.totals.errored
    assert step.sink_results[1] == ("assay.engine.load_child", False)


def test_load_processes_started_for_another_process_count_are_refused() -> None:
    with start_load_processes(3) as started, pytest.raises(ConfigError, match="3 load processes"):
        run_benchmark(two_process_plan(Constraints(max_requests=2)), counting_sink, started=started)


def test_load_processes_started_ahead_and_never_used_stop_cleanly() -> None:
    with start_load_processes(2) as started:
        [child] = started.children
    assert child.popen.returncode == 0


def test_a_plan_without_a_process_count_takes_the_cpus_this_process_may_run_on(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A container narrows the affinity below the machine's CPU count.
    monkeypatch.setattr(os, "cpu_count", lambda: 64)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1, 2}, raising=False)
    plan = BenchmarkPlan(
        profile=Constant(rate=50),
        source=SyntheticSource(
            model="m", prompt_tokens=FixedCount(value=8), output_tokens=FixedCount(value=4)
        ),
        backend=BackendSettings(base_url="http://127.0.0.1:9"),
        validator_factory=partial(default_chain, Endpoint.chat),
    )
    assert plan.processes == 3
