"""A server of finite capacity: slots, a token budget, and answers that go bad under load.

The model is small enough to be solved by hand, so a capacity search has a known answer:

- `slots` N: at most N requests are answered at once; the others wait in arrival order for a
  slot. A request's TTFT is its wait plus the latency model's TTFT, so it grows with the queue.
  With a fixed service time S per answer (TTFT + (tokens - 1) x ITL) the server sustains N / S
  requests per second, and a closed loop of N streams.
- `tokens_per_s` B: every output token, of every answer, takes its turn on one shared clock
  that lets B tokens out per second (a token goes at the later of its own time and its turn;
  turns the server's busy loop missed are taken up within 50 ms, so its rate holds). Answers
  of L tokens are sustained up to B / L requests per second.
- `fault_past` P: a request that finds more than P requests in the server (itself, the ones
  answered and the ones waiting) is answered with `fault` (`empty`: an empty answer; `cut`: a
  stream that ends after `fault_after_tokens` tokens without its end), so past a load of P in
  the server answers come back unusable, however fast.

Each worker process holds its own slots and budget (`--workers W` serves W times as much).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Self

from pydantic import BaseModel, ConfigDict, Field, model_validator

from assay.spec.sections import LoadFault, Mock

_FAULT_NAMES: dict[LoadFault, str] = {"empty": "empty_stream", "cut": "truncated_stream"}


class ServerModel(BaseModel):
    """The mock's capacity (see the module's doc); every part is optional, none set = unbounded.

    >>> ServerModel(slots=40).slots
    40
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    slots: int | None = Field(default=None, gt=0)
    tokens_per_s: float | None = Field(default=None, gt=0, allow_inf_nan=False)
    fault_past: int | None = Field(default=None, gt=0)
    fault: LoadFault = "empty"

    @model_validator(mode="after")
    def _fault_needs_a_load(self) -> Self:
        if self.fault != "empty" and self.fault_past is None:
            raise ValueError("a load fault needs the load past which it strikes (fault_past)")
        return self

    @classmethod
    def of(cls, section: Mock) -> ServerModel:
        """The finite server the run's mock section (or `assay mock`'s flags) asks for.

        >>> ServerModel.of(Mock(slots=40))
        ServerModel(slots=40, tokens_per_s=None, fault_past=None, fault='empty')
        """
        return cls(
            slots=section.slots,
            tokens_per_s=section.tokens_per_s,
            fault_past=section.fault_past,
            fault=section.load_fault,
        )

    @property
    def bounded(self) -> bool:
        """Whether any part of the model is set."""
        return (
            self.slots is not None or self.tokens_per_s is not None or self.fault_past is not None
        )

    @property
    def fault_name(self) -> str:
        """The mock fault an answer past `fault_past` gets.

        >>> ServerModel(fault_past=3, fault="cut").fault_name
        'truncated_stream'
        """
        return _FAULT_NAMES[self.fault]


_CATCH_UP_NS = 50_000_000

Sleep = Callable[[float], Awaitable[None]]
"""Waits a number of seconds (`asyncio.sleep`; a test passes one that moves its own clock or
records the latencies the mock waits out)."""


class ServerLoad:
    """The runtime state of a `ServerModel` in one server process: who is in, the slot queue and
    the token clock."""

    def __init__(
        self,
        model: ServerModel,
        now_ns: Callable[[], int] = time.monotonic_ns,
        sleep: Sleep = asyncio.sleep,
    ) -> None:
        self.model = model
        self.in_server = 0
        self._now_ns = now_ns
        self._sleep = sleep
        self._slots = asyncio.Semaphore(model.slots) if model.slots is not None else None
        self._token_gap_ns = 1e9 / model.tokens_per_s if model.tokens_per_s is not None else None
        self._next_token_ns = 0.0
        # Tokens wait their turn in arrival order; a waiter that is cancelled (its client left)
        # leaves the line without holding a turn.
        self._token_line = asyncio.Lock()

    @asynccontextmanager
    async def admitted(self) -> AsyncIterator[bool]:
        """Hold a slot while the answer is played (waiting for one first); yields whether the
        answer must go bad, decided by the requests in the server when this one arrived."""
        self.in_server += 1
        past = self.model.fault_past
        faulty = past is not None and self.in_server > past
        try:
            if self._slots is None:
                yield faulty
            else:
                async with self._slots:
                    yield faulty
        finally:
            self.in_server -= 1

    async def take_tokens(self, tokens: int = 1) -> None:
        """Wait for the turn of `tokens` more output tokens on the token clock, which lets out
        `tokens_per_s` a second over every answer (nothing to wait for without a budget); the
        last of them goes when this returns."""
        gap = self._token_gap_ns
        if gap is None or tokens <= 0:
            return
        async with self._token_line:
            # A turn missed while the server's loop was busy may be taken up to `_CATCH_UP_NS`
            # late: the clock keeps its rate instead of losing the turns it slept through.
            start = max(float(self._now_ns()) - _CATCH_UP_NS, self._next_token_ns)
            wait_ns = start - self._now_ns()
            if wait_ns > 0:
                await self._sleep(wait_ns / 1e9)
            self._next_token_ns = start + gap * tokens
        if tokens > 1:
            await self._sleep(gap * (tokens - 1) / 1e9)


async def wait_for_tokens(load: ServerLoad | None, tokens: int = 1) -> None:
    """Wait for the turn of `tokens` more output tokens (nothing without a finite server)."""
    if load is not None:
        await load.take_tokens(tokens)


__all__ = ["LoadFault", "ServerLoad", "ServerModel", "Sleep", "wait_for_tokens"]
