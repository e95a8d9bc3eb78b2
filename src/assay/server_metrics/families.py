"""Which Prometheus samples carry which quantity, per server kind (vLLM, SGLang, TGI, llama.cpp).

A scrape is flattened into sample name -> value (label sets summed, so several models or engine
ranks add up); each kind names the sample that holds each quantity. Counters are read as deltas
between two scrapes, gauges as they are.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from typing import Final


class ServerKind(StrEnum):
    """The server families whose metric names assay knows."""

    vllm = "vllm"
    sglang = "sglang"
    tgi = "tgi"
    llamacpp = "llamacpp"


class Quantity(StrEnum):
    """What assay reads from a server's metrics."""

    requests_finished = "requests_finished"
    prompt_tokens = "prompt_tokens"
    generation_tokens = "generation_tokens"
    requests_running = "requests_running"
    requests_waiting = "requests_waiting"
    kv_cache_usage = "kv_cache_usage"


COUNTERS: Final = frozenset(
    {Quantity.requests_finished, Quantity.prompt_tokens, Quantity.generation_tokens}
)
GAUGES: Final = frozenset(
    {Quantity.requests_running, Quantity.requests_waiting, Quantity.kv_cache_usage}
)

# Sample names per kind; a tuple lists alternatives across versions, the first present is used.
SAMPLES: Final[Mapping[ServerKind, Mapping[Quantity, tuple[str, ...]]]] = {
    ServerKind.vllm: {
        Quantity.requests_finished: ("vllm:request_success_total",),
        Quantity.prompt_tokens: ("vllm:prompt_tokens_total",),
        Quantity.generation_tokens: ("vllm:generation_tokens_total",),
        Quantity.requests_running: ("vllm:num_requests_running",),
        Quantity.requests_waiting: ("vllm:num_requests_waiting",),
        Quantity.kv_cache_usage: ("vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc"),
    },
    ServerKind.sglang: {
        Quantity.prompt_tokens: ("sglang:prompt_tokens_total",),
        Quantity.generation_tokens: ("sglang:generation_tokens_total",),
        Quantity.requests_running: ("sglang:num_running_reqs",),
        Quantity.requests_waiting: ("sglang:num_queue_reqs",),
        Quantity.kv_cache_usage: ("sglang:token_usage",),
    },
    ServerKind.tgi: {
        Quantity.requests_finished: ("tgi_request_success", "tgi_request_success_total"),
        Quantity.prompt_tokens: ("tgi_request_input_length_sum",),
        Quantity.generation_tokens: ("tgi_request_generated_tokens_sum",),
        Quantity.requests_running: ("tgi_batch_current_size",),
        Quantity.requests_waiting: ("tgi_queue_size",),
    },
    ServerKind.llamacpp: {
        Quantity.prompt_tokens: ("llamacpp:prompt_tokens_total",),
        Quantity.generation_tokens: ("llamacpp:tokens_predicted_total",),
        Quantity.requests_running: ("llamacpp:requests_processing",),
        Quantity.requests_waiting: ("llamacpp:requests_deferred",),
        Quantity.kv_cache_usage: ("llamacpp:kv_cache_usage_ratio",),
    },
}

_PREFIXES: Final = {
    ServerKind.vllm: "vllm:",
    ServerKind.sglang: "sglang:",
    ServerKind.tgi: "tgi_",
    ServerKind.llamacpp: "llamacpp:",
}


def detect_kind(samples: Mapping[str, float]) -> ServerKind | None:
    """The server kind whose metric prefix the samples use most, or None for none known.

    >>> detect_kind({"vllm:num_requests_running": 0.0, "process_cpu_seconds_total": 1.0})
    <ServerKind.vllm: 'vllm'>
    >>> detect_kind({"process_cpu_seconds_total": 1.0}) is None
    True
    """
    counts = {
        kind: sum(1 for name in samples if name.startswith(prefix))
        for kind, prefix in _PREFIXES.items()
    }
    best = max(counts, key=lambda kind: counts[kind])
    return best if counts[best] else None


def quantities_of(kind: ServerKind, samples: Mapping[str, float]) -> dict[Quantity, float]:
    """The quantities present in `samples` for a server of `kind`.

    >>> quantities_of(ServerKind.vllm, {"vllm:generation_tokens_total": 12.0})
    {<Quantity.generation_tokens: 'generation_tokens'>: 12.0}
    """
    out: dict[Quantity, float] = {}
    for quantity, names in SAMPLES[kind].items():
        for name in names:
            value = samples.get(name)
            if value is not None:
                out[quantity] = value
                break
    return out
