"""Request fields beyond the prompt, and keeping what validators see in step with them.

Fields come in layers (the run's flags and config, then a data row's own fields); a later layer
wins key by key. When the fields set the output limit or `ignore_eos` themselves, the request's
own `max_output_tokens` / `ignore_eos` follow them, so the validators judge the answer against
what was really asked for on the wire.
"""

from __future__ import annotations

from collections.abc import Mapping

from pydantic import JsonValue

from assay.core import Endpoint


def _limit_keys(endpoint: Endpoint) -> tuple[str, ...]:
    """The body fields that set the output-token limit on `endpoint`."""
    match endpoint:
        case Endpoint.chat:
            return ("max_tokens", "max_completion_tokens")
        case Endpoint.completions:
            return ("max_tokens",)
        case Endpoint.responses:
            return ("max_output_tokens",)
        case Endpoint.embeddings | Endpoint.rerank | Endpoint.score:
            return ()
        case Endpoint.transcriptions:
            return ("max_completion_tokens",)


def asked_limits(
    endpoint: Endpoint,
    fields: Mapping[str, JsonValue],
    max_output_tokens: int | None,
    ignore_eos: bool,
) -> tuple[int | None, bool]:
    """The output limit and `ignore_eos` the body really carries once `fields` are merged.

    >>> asked_limits(Endpoint.chat, {"max_tokens": 7, "ignore_eos": True}, 128, False)
    (7, True)
    >>> asked_limits(Endpoint.responses, {"max_tokens": 7}, 128, False)
    (128, False)
    """
    for key in _limit_keys(endpoint):
        value = fields.get(key)
        if type(value) is int:
            max_output_tokens = value
    eos = fields.get("ignore_eos")
    if isinstance(eos, bool):
        ignore_eos = eos
    return max_output_tokens, ignore_eos


__all__ = ["asked_limits"]
