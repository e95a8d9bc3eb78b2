"""The page's latency samples: per metric and step, a bounded uniform sample of per-request
TTFT, TPOT and E2E (ms) of the completed requests in records.jsonl, for the CDF charts.

TTFT is first token - send, E2E is end - send, TPOT is (E2E - TTFT) / (output tokens - 1) for
answers of two or more tokens. Each list is a uniform sample of at most `MAX_SAMPLES_PER_STEP`
values (reservoir sampling, seeded), so memory stays bounded however long the run was.
"""

from __future__ import annotations

import random
from typing import Final

# Per step and metric, the CDF keeps a uniform random sample of at most this many requests, so
# the page stays small and quick to draw however long the run was.
MAX_SAMPLES_PER_STEP: Final = 20_000
CDF_METRICS: Final = ("ttft_ms", "tpot_ms", "e2e_ms")

Samples = dict[str, dict[int, list[float]]]
"""Per metric (`CDF_METRICS`) and step index, the sampled values (ms)."""


class LatencySamples:
    """Reservoirs of the three metrics per step, fed one completed request at a time.

    >>> kept = LatencySamples()
    >>> kept.add(0, send=0, first=2_000_000, end=10_000_000, tokens=5)
    >>> kept.samples
    {'ttft_ms': {0: [2.0]}, 'tpot_ms': {0: [2.0]}, 'e2e_ms': {0: [10.0]}}
    """

    __slots__ = ("_bits", "_e2e", "_seen", "_tpot", "_ttft", "samples")

    def __init__(self, seed: int = 0) -> None:
        self._bits = random.Random(seed).getrandbits
        self.samples: Samples = {metric: {} for metric in CDF_METRICS}
        self._ttft, self._tpot, self._e2e = (self.samples[metric] for metric in CDF_METRICS)
        # Per metric and step, past a full reservoir, how many values were offered in all.
        self._seen: dict[str, dict[int, int]] = {metric: {} for metric in CDF_METRICS}

    def add(self, step: int, send: int, first: object, end: int, tokens: int | None) -> None:
        """Offer one completed request: sent at `send`, its first token at `first` (when an
        int), ended at `end`, with `tokens` output tokens (when known)."""
        # Each value goes straight into its list while the list has room (`_keep` otherwise).
        e2e = (end - send) / 1e6
        bucket = self._e2e.get(step)
        if bucket is not None and len(bucket) < MAX_SAMPLES_PER_STEP:
            bucket.append(e2e)
        else:
            self._keep(self._e2e, "e2e_ms", step, e2e)
        if not isinstance(first, int):
            return
        ttft = (first - send) / 1e6
        bucket = self._ttft.get(step)
        if bucket is not None and len(bucket) < MAX_SAMPLES_PER_STEP:
            bucket.append(ttft)
        else:
            self._keep(self._ttft, "ttft_ms", step, ttft)
        if tokens is None or tokens <= 1:
            return
        tpot = (e2e - ttft) / (tokens - 1)
        bucket = self._tpot.get(step)
        if bucket is not None and len(bucket) < MAX_SAMPLES_PER_STEP:
            bucket.append(tpot)
        else:
            self._keep(self._tpot, "tpot_ms", step, tpot)

    def _keep(self, per_step: dict[int, list[float]], metric: str, step: int, value: float) -> None:
        bucket = per_step.get(step)
        if bucket is None:
            bucket = per_step[step] = []
        if len(bucket) < MAX_SAMPLES_PER_STEP:
            bucket.append(value)
            return
        # Algorithm R: the n-th value offered replaces a random slot with chance MAX / n. The
        # slot is drawn below n by rejection from n's bit length of random bits, as
        # `random.Random.randrange(n)` draws it (the same slots, without its checks).
        seen = self._seen[metric]
        count = seen[step] = seen.get(step, MAX_SAMPLES_PER_STEP) + 1
        bits = count.bit_length()
        slot = self._bits(bits)
        while slot >= count:
            slot = self._bits(bits)
        if slot < MAX_SAMPLES_PER_STEP:
            bucket[slot] = value
