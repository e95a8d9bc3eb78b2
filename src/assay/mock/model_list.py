"""The mock's `/v1/models`: every model it serves, as vLLM lists its model and adapters."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def model_list(names: Sequence[str], created: int, max_model_len: int | None) -> dict[str, Any]:
    """The `/v1/models` body listing `names` (each with the context window, when set).

    >>> [model["id"] for model in model_list(["assay-mock", "lora-a"], 0, None)["data"]]
    ['assay-mock', 'lora-a']
    >>> model_list(["m"], 0, 4096)["data"][0]["max_model_len"]
    4096
    """
    listed = []
    for name in names:
        model: dict[str, Any] = {
            "id": name,
            "object": "model",
            "created": created,
            "owned_by": "assay",
            "root": name,
            "parent": None,
        }
        if max_model_len is not None:
            model["max_model_len"] = max_model_len
        listed.append(model)
    return {"object": "list", "data": listed}


__all__ = ["model_list"]
