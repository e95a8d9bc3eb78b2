"""What `/v1/models` says about each model it lists: its id, and its context window where the
server names it.

vLLM and SGLang list each model with `max_model_len`, the most tokens one request may hold,
prompt and output together (the server refuses a request above it with a 400). It comes with
the listing readiness reads anyway, so knowing it costs no request. Other servers name no
window there, and assay sends no request more to learn one: llama.cpp lists only the context the
model was trained with (`meta.n_ctx_train`), not the one each slot serves (`/props`
`default_generation_settings.n_ctx`), and it refuses only a prompt that fills a slot (an answer
is cut at the window instead); TGI has its limits at `/info` (`max_input_tokens`,
`max_total_tokens`). Their window stays unknown unless the user states it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from pydantic import JsonValue

# The key vLLM's and SGLang's model cards carry the window under.
WINDOW_KEY: Final = "max_model_len"


@dataclass(frozen=True, slots=True)
class ServedModel:
    """One model the server lists: its id, and its context window in tokens when named."""

    id: str
    context_window: int | None = None


def served_models(listed: list[JsonValue]) -> list[ServedModel]:
    """The models of a `/v1/models` `data` list; entries without a string id are skipped.

    A window that is not a whole number of tokens above 0 is read as not named.

    >>> served_models([{"id": "m", "max_model_len": 4096}, {"id": "n", "max_model_len": "8k"}])
    [ServedModel(id='m', context_window=4096), ServedModel(id='n', context_window=None)]
    """
    models: list[ServedModel] = []
    for item in listed:
        if not isinstance(item, dict):
            continue
        model_id = item.get("id")
        if not isinstance(model_id, str):
            continue
        window = item.get(WINDOW_KEY)
        named = window if type(window) is int and window > 0 else None
        models.append(ServedModel(model_id, named))
    return models


__all__ = ["WINDOW_KEY", "ServedModel", "served_models"]
