"""The mock's `/metrics`: what it served, in vLLM's metric names, truthfully.

A request counts as finished (`vllm:request_success_total`, with its finish reason) when the
mock wrote its answer to the end: a clean answer, or a fault at the content stage (an empty or
short answer is still an answer the engine finished). Early errors, dropped and stalled
streams, and answers cut mid-way do not count. Prompt and generation tokens count what the
engine processed, as vLLM's do (it counts the tokens generated before an abort): the finished
answers' tokens, and of a stream cut mid-way (`faults.CUT_FAULTS`) its prompt and the tokens
written before the cut. `vllm:num_requests_running` is the number of generation requests in
progress.

Several worker processes share one port, so a scrape reaches any one of them: each worker keeps
its counters in its own slot of a small shared file, and `/metrics` sums every slot.
`scale` makes the mock misreport (tests of the client's cross-check use it).

A mock told of a GPU (`MockConfig.gpu_watts`) also shows what NVIDIA's DCGM exporter shows of
one GPU: its power and its energy since boot, of a GPU drawing that power at all times, so a run
against the mock can show joules per usable token (`gpu_lines`).

A mock serving several models (`MockConfig.served_names`) counts each apart, as vLLM labels its
series with `model_name`: one series per model, which a scraper summing label sets adds up to
the totals a single model's series gives. A request naming a model the mock does not list is
counted under its own name, `model_name`.
"""

from __future__ import annotations

import mmap
import os
import time
from collections.abc import Sequence
from enum import IntEnum
from pathlib import Path
from typing import Final

from assay.mock.faults import RANKING_FAULTS, FaultSpec
from assay.mock.script import Answer
from assay.spec.endpoint import Endpoint


class Served(IntEnum):
    """The counters of one worker, in slot order."""

    running = 0
    success_stop = 1
    success_length = 2
    prompt_tokens = 3
    generation_tokens = 4


# The counters of one model, and their bytes.
_WIDTH: Final = len(Served)
SLOT_BYTES: Final = _WIDTH * 8
_SUCCESS_STOP: Final = int(Served.success_stop)
_SUCCESS_LENGTH: Final = int(Served.success_length)
_PROMPT_TOKENS: Final = int(Served.prompt_tokens)
_GENERATION_TOKENS: Final = int(Served.generation_tokens)

# Faults whose answer the engine still finished: the answer is there, only unusable. Their
# generation tokens are the tokens written (none for the empty ones).
FINISHED_FAULTS: Final = frozenset(
    {
        "empty_stream",
        "choices_empty",
        "missing_finish_reason",
        "wrong_usage",
        "short_output",
        "empty_embedding",
        "invalid_tool_call",
        "invalid_json_output",
        "missing_done",
    }
    | RANKING_FAULTS  # a ranking's answer is whole, only wrong
)
EMPTY_FAULTS: Final = frozenset({"empty_stream", "choices_empty"})


def generated_tokens(
    api: Endpoint, answer: Answer, fault: FaultSpec | None, tool_pieces: Sequence[str]
) -> int:
    """The output tokens of a finished answer, as its usage reports them when the usage is
    true: a tool call's arguments when it called a tool (`tool_pieces` when it was invalid),
    none for an empty answer."""
    name = fault.name if fault is not None else None
    if name in EMPTY_FAULTS:
        return 0
    if api is Endpoint.chat and name == "invalid_tool_call":
        return len(tool_pieces)
    if api is Endpoint.chat and name is None and answer.tool_pieces is not None:
        return len(answer.tool_pieces)
    return len(answer.pieces)


def create_counters_file(path: Path, workers: int, models: int) -> None:
    """A zeroed file with one slot per worker, each with the counters of `models` models."""
    path.write_bytes(bytes(SLOT_BYTES * workers * models))


class ServedCounters:
    """One worker's counters (its slot) and a view of every worker's, for `/metrics`; a slot
    holds `models` sets of counters, one per model served (the mock's own first)."""

    __slots__ = ("_map", "_slot", "_values", "_workers", "models")

    def __init__(
        self, path: Path | None = None, slot: int = 0, workers: int = 1, models: int = 1
    ) -> None:
        size = SLOT_BYTES * workers * models
        if path is None:
            self._map: mmap.mmap | None = None
            buffer: bytearray | mmap.mmap = bytearray(size)
        else:
            descriptor = os.open(path, os.O_RDWR)
            try:
                self._map = buffer = mmap.mmap(descriptor, size)
            finally:
                os.close(descriptor)
        self._values = memoryview(buffer).cast("q")
        self._slot = slot * _WIDTH * models
        self._workers = workers
        self.models = models

    def add(self, field: Served, amount: int = 1, model: int = 0) -> None:
        """Add `amount` to this worker's counter `field` of model `model` (by its index)."""
        self._values[self._slot + model * _WIDTH + field] += amount

    def finished(
        self, finish_reason: str | None, prompt_tokens: int, output_tokens: int, model: int = 0
    ) -> None:
        """Count one answer written to its end."""
        # Once per answer: plain ints and one offset, no enum lookups (the mock is a target of
        # throughput benchmarks).
        base = self._slot + model * _WIDTH
        values = self._values
        values[base + (_SUCCESS_LENGTH if finish_reason == "length" else _SUCCESS_STOP)] += 1
        values[base + _PROMPT_TOKENS] += prompt_tokens
        values[base + _GENERATION_TOKENS] += output_tokens

    def cut(self, prompt_tokens: int, written_tokens: int, model: int = 0) -> None:
        """Count a stream cut mid-way: its prompt and the tokens written, no finished request."""
        base = self._slot + model * _WIDTH
        self._values[base + _PROMPT_TOKENS] += prompt_tokens
        self._values[base + _GENERATION_TOKENS] += written_tokens

    def total(self, field: Served, model: int) -> int:
        """`field` of one model (by index) summed over every worker."""
        return sum(
            self._values[(slot * self.models + model) * _WIDTH + field]
            for slot in range(self._workers)
        )

    def render(self, model_names: Sequence[str], scale: float = 1.0) -> str:
        """The Prometheus text exposition of the totals (counters scaled by `scale`), a series
        per model of `model_names` (in counter order)."""
        # A label value escapes backslashes, quotes and line feeds (the exposition format).
        escaped = (
            n.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") for n in model_names
        )
        labels = [f'model_name="{name}"' for name in escaped]

        def each(field: Served, pattern: str) -> list[str]:
            return [
                pattern.format(label=label, value=self.total(field, model) * scale)
                for model, label in enumerate(labels)
            ]

        lines = [
            "# HELP vllm:num_requests_running Number of requests in model execution batches.",
            "# TYPE vllm:num_requests_running gauge",
            *[
                f"vllm:num_requests_running{{{label}}} {self.total(Served.running, model)}"
                for model, label in enumerate(labels)
            ],
            "# HELP vllm:num_requests_waiting Number of requests waiting to be processed.",
            "# TYPE vllm:num_requests_waiting gauge",
            *[f"vllm:num_requests_waiting{{{label}}} 0" for label in labels],
            "# HELP vllm:request_success_total Count of successfully processed requests.",
            "# TYPE vllm:request_success_total counter",
            *each(
                Served.success_stop,
                'vllm:request_success_total{{finished_reason="stop",{label}}} {value}',
            ),
            *each(
                Served.success_length,
                'vllm:request_success_total{{finished_reason="length",{label}}} {value}',
            ),
            "# HELP vllm:prompt_tokens_total Number of prefill tokens processed.",
            "# TYPE vllm:prompt_tokens_total counter",
            *each(Served.prompt_tokens, "vllm:prompt_tokens_total{{{label}}} {value}"),
            "# HELP vllm:generation_tokens_total Number of generation tokens processed.",
            "# TYPE vllm:generation_tokens_total counter",
            *each(Served.generation_tokens, "vllm:generation_tokens_total{{{label}}} {value}"),
        ]
        return "\n".join(lines) + "\n"

    def close(self) -> None:
        """Release the shared file mapping (a no-op for in-memory counters)."""
        self._values.release()
        if self._map is not None:
            self._map.close()


def gpu_lines(watts: float, seconds_since_boot: float | None = None) -> list[str]:
    """The DCGM exporter's lines for one GPU drawing `watts` since the machine booted: its power
    gauge, and its energy counter in millijoules. The counter is read off the machine's monotonic
    clock, which every worker process shares, so scrapes reaching any worker never go back.

    >>> for line in gpu_lines(300.0, 2.0):
    ...     print(line)
    # HELP DCGM_FI_DEV_POWER_USAGE Power draw (in W).
    # TYPE DCGM_FI_DEV_POWER_USAGE gauge
    DCGM_FI_DEV_POWER_USAGE{gpu="0",modelName="assay-mock simulated GPU"} 300.0
    # HELP DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION Total energy consumption since boot (in mJ).
    # TYPE DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION counter
    DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{gpu="0",modelName="assay-mock simulated GPU"} 600000
    """
    seconds = time.monotonic() if seconds_since_boot is None else seconds_since_boot
    labels = 'gpu="0",modelName="assay-mock simulated GPU"'
    return [
        "# HELP DCGM_FI_DEV_POWER_USAGE Power draw (in W).",
        "# TYPE DCGM_FI_DEV_POWER_USAGE gauge",
        f"DCGM_FI_DEV_POWER_USAGE{{{labels}}} {watts!r}",
        "# HELP DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION Total energy consumption since boot (in mJ).",
        "# TYPE DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION counter",
        f"DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{{{labels}}} {round(watts * seconds * 1000)}",
    ]
