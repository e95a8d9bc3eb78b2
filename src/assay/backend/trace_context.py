"""W3C trace context (`traceparent`) for each request, unique to the run.

With `--trace-context` every request carries a `traceparent` header (W3C Trace Context,
version 00) whose trace id and parent id are a keyed hash of a key drawn at random for the run,
the run's seed and the request's id; the record keeps the header, so a request can be found in
the server's OpenTelemetry traces. Two runs never share a trace id, so a trace backend never
merges them (issue 38: with ids from the seed alone, every run with seed 42 fell into the same
traces). `--trace-from-seed` leaves the random key out: a rerun with the same seed then sends
the same ids. `sample` is the fraction of requests whose sampled flag is set, chosen by the same
hash.
"""

from __future__ import annotations

import hashlib
import secrets

from pydantic import BaseModel, ConfigDict, Field

# The keyed hash every id starts from: copying it costs half of keying a new one (per request).
_KEYED = hashlib.blake2b(digest_size=32, key=b"assay.traceparent")
_SAMPLED = "01"
_NOT_SAMPLED = "00"
_ZERO_TRACE = "0" * 32
_ZERO_PARENT = "0" * 16


class TraceContext(BaseModel):
    """Send a `traceparent` on every request: ids from `seed` and `run_key` (empty: from the
    seed alone), `sample` of them sampled."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    seed: int = 0
    run_key: str = ""
    sample: float = Field(default=1.0, ge=0.0, le=1.0)

    @classmethod
    def for_run(cls, seed: int, sample: float, *, from_seed: bool) -> TraceContext:
        """The trace context of one run: a fresh random `run_key`, unless `from_seed`.

        >>> TraceContext.for_run(5, 1.0, from_seed=False).traceparent("req-00000001") != (
        ...     TraceContext.for_run(5, 1.0, from_seed=False).traceparent("req-00000001"))
        True
        >>> TraceContext.for_run(5, 1.0, from_seed=True) == TraceContext(seed=5)
        True
        """
        return cls(seed=seed, run_key="" if from_seed else secrets.token_hex(16), sample=sample)

    def traceparent(self, request_id: str) -> str:
        """The `traceparent` header value of request `request_id`.

        >>> context = TraceContext(seed=7)
        >>> value = context.traceparent("req-00000042")
        >>> value == context.traceparent("req-00000042"), value[:3], len(value)
        (True, '00-', 55)
        >>> value != context.traceparent("req-00000043") != TraceContext(seed=8).traceparent(
        ...     "req-00000042")
        True
        >>> TraceContext(seed=7, sample=0.0).traceparent("req-00000042")[-2:]
        '00'
        """
        keyed = _KEYED.copy()
        run = f"{self.seed}:{self.run_key}:" if self.run_key else f"{self.seed}:"
        keyed.update(f"{run}{request_id}".encode())
        digest = keyed.hexdigest()
        trace_id, parent_id = digest[:32], digest[32:48]
        # All zeros is an invalid id (W3C Trace Context, 3.2.2.3-4): one in 2**128, but a
        # receiver would drop the whole header, so it is nudged off zero.
        if trace_id == _ZERO_TRACE:
            trace_id = trace_id[:-1] + "1"
        if parent_id == _ZERO_PARENT:
            parent_id = parent_id[:-1] + "1"
        # The last 8 bytes decide sampling, independently of the ids themselves.
        sampled = int(digest[48:], 16) < self.sample * 2**64
        return f"00-{trace_id}-{parent_id}-{_SAMPLED if sampled else _NOT_SAMPLED}"


__all__ = ["TraceContext"]
