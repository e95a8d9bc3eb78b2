"""A proxy seen between assay and the server, and what it is known to hide (issue 38).

A proxy rebuilds every answer: where the server failed, it may send a clean one, and no client
can see that on the wire (docs/servers.md, "Proxies in front of a server"). assay cannot undo
that, but it can say that a proxy answered and what that proxy is known to turn into what.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class SeenProxy(BaseModel):
    """A proxy that answered the run's requests: its `name`, the header that showed it
    (`evidence`), and what it is known to hide (measured, see docs/servers.md)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    evidence: str
    hides: tuple[str, ...] = ()

    def note(self) -> str:
        """One line for the run's notes.

        >>> seen = SeenProxy(name="LiteLLM", evidence="x-litellm-call-id", hides=("a", "b"))
        >>> print(seen.note())  # doctest: +ELLIPSIS
        target: answered by LiteLLM (x-litellm-call-id), known to hide faults ...: a; b (--server...
        """
        hides = "; ".join(self.hides) if self.hides else "none measured yet"
        return (
            f"target: answered by {self.name} ({self.evidence}), known to hide faults of the "
            f"server behind it: {hides} (--server-metrics at the server's own /metrics shows what "
            "it finished)"
        )


__all__ = ["SeenProxy"]
