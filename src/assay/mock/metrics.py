"""The mock's `/metrics`: what it served, in vLLM's metric names, truthfully.

A request counts as finished (`vllm:request_success_total`, with its finish reason) when the
mock wrote its answer to the end: a clean answer, or a fault at the content stage (an empty or
short answer is still an answer the engine finished). Early errors, dropped and stalled
streams, and answers cut mid-way do not count. Prompt and generation tokens count what the
engine processed, as vLLM's do: the finished answers' tokens, and of a stream cut mid-way (see
`CUT_FAULTS`) its prompt and the tokens written before the cut. `vllm:num_requests_running` is
the number of generation requests in progress.

Several worker processes share one port, so a scrape reaches any one of them: each worker keeps
its counters in its own slot of a small shared file, and `/metrics` sums every slot.
`scale` makes the mock misreport (tests of the client's cross-check use it).
"""

from __future__ import annotations

import mmap
import os
from enum import IntEnum
from pathlib import Path
from typing import Final


class Served(IntEnum):
    """The counters of one worker, in slot order."""

    running = 0
    success_stop = 1
    success_length = 2
    prompt_tokens = 3
    generation_tokens = 4


SLOT_BYTES: Final = len(Served) * 8

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
        "no_results",
        "result_count_mismatch",
        "index_out_of_range",
        "repeated_index",
        "non_finite_score",
    }
)
EMPTY_FAULTS: Final = frozenset({"empty_stream", "choices_empty"})
# Faults that cut a stream after `after` tokens (the answer never finishes): vLLM counts the
# tokens it generated before an abort, so these count their prompt and the tokens written.
CUT_FAULTS: Final = frozenset(
    {"inband_error", "sse_error_event", "truncated_stream", "drop", "stall", "invalid_json"}
)


def create_counters_file(path: Path, workers: int) -> None:
    """A zeroed file with one slot per worker."""
    path.write_bytes(bytes(SLOT_BYTES * workers))


class ServedCounters:
    """One worker's counters (its slot) and a view of every worker's, for `/metrics`."""

    __slots__ = ("_map", "_slot", "_values", "_workers")

    def __init__(self, path: Path | None = None, slot: int = 0, workers: int = 1) -> None:
        if path is None:
            self._map: mmap.mmap | None = None
            buffer: bytearray | mmap.mmap = bytearray(SLOT_BYTES * workers)
        else:
            descriptor = os.open(path, os.O_RDWR)
            try:
                self._map = buffer = mmap.mmap(descriptor, SLOT_BYTES * workers)
            finally:
                os.close(descriptor)
        self._values = memoryview(buffer).cast("q")
        self._slot = slot * len(Served)
        self._workers = workers

    def add(self, field: Served, amount: int = 1) -> None:
        """Add `amount` to this worker's counter `field`."""
        self._values[self._slot + field] += amount

    def finished(self, finish_reason: str | None, prompt_tokens: int, output_tokens: int) -> None:
        """Count one answer written to its end."""
        reason = Served.success_length if finish_reason == "length" else Served.success_stop
        self.add(reason)
        self.add(Served.prompt_tokens, prompt_tokens)
        self.add(Served.generation_tokens, output_tokens)

    def cut(self, prompt_tokens: int, written_tokens: int) -> None:
        """Count a stream cut mid-way: its prompt and the tokens written, no finished request."""
        self.add(Served.prompt_tokens, prompt_tokens)
        self.add(Served.generation_tokens, written_tokens)

    def total(self, field: Served) -> int:
        """`field` summed over every worker."""
        width = len(Served)
        return sum(self._values[slot * width + field] for slot in range(self._workers))

    def render(self, model_name: str, scale: float = 1.0) -> str:
        """The Prometheus text exposition of the totals (counters scaled by `scale`)."""
        label = f'model_name="{model_name}"'

        def scaled(field: Served) -> float:
            return self.total(field) * scale

        lines = [
            "# HELP vllm:num_requests_running Number of requests in model execution batches.",
            "# TYPE vllm:num_requests_running gauge",
            f"vllm:num_requests_running{{{label}}} {self.total(Served.running)}",
            "# HELP vllm:num_requests_waiting Number of requests waiting to be processed.",
            "# TYPE vllm:num_requests_waiting gauge",
            f"vllm:num_requests_waiting{{{label}}} 0",
            "# HELP vllm:request_success_total Count of successfully processed requests.",
            "# TYPE vllm:request_success_total counter",
            f'vllm:request_success_total{{finished_reason="stop",{label}}} '
            f"{scaled(Served.success_stop)}",
            f'vllm:request_success_total{{finished_reason="length",{label}}} '
            f"{scaled(Served.success_length)}",
            "# HELP vllm:prompt_tokens_total Number of prefill tokens processed.",
            "# TYPE vllm:prompt_tokens_total counter",
            f"vllm:prompt_tokens_total{{{label}}} {scaled(Served.prompt_tokens)}",
            "# HELP vllm:generation_tokens_total Number of generation tokens processed.",
            "# TYPE vllm:generation_tokens_total counter",
            f"vllm:generation_tokens_total{{{label}}} {scaled(Served.generation_tokens)}",
        ]
        return "\n".join(lines) + "\n"

    def close(self) -> None:
        """Release the shared file mapping (a no-op for in-memory counters)."""
        self._values.release()
        if self._map is not None:
            self._map.close()
