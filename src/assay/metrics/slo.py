"""Service-level objectives for goodput: which completed requests count as served well enough."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class Slo(BaseModel):
    """Latency limits in milliseconds; a completed request meets the SLO when it meets every limit
    that is set. Unset limits are not checked; with no limit set every completed request is good.

    - `ttft_ms`: time to first token. A request without a first-token time does not meet it.
      A non-streamed answer (and an embeddings one) reaches the client whole, so its first token
      is checked by its E2E.
    - `tpot_ms`: time per output token; requests with fewer than 2 output tokens have no TPOT
      and meet it trivially.
    - `itl_ms`: every inter-token gap of the request (its worst gap) must be within the limit;
      requests with no gap meet it trivially.
    - `e2e_ms`: end-to-end latency from the actual send.

    >>> Slo(ttft_ms=200, tpot_ms=50).ttft_ms
    200.0
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    ttft_ms: float | None = Field(default=None, gt=0)
    tpot_ms: float | None = Field(default=None, gt=0)
    itl_ms: float | None = Field(default=None, gt=0)
    e2e_ms: float | None = Field(default=None, gt=0)
