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

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final

from pydantic import JsonValue

from assay.printable import printable
from assay.spec.limits import MAX_CONTEXT_WINDOW

# The key vLLM's and SGLang's model cards carry the window under.
WINDOW_KEY: Final = "max_model_len"
# How many model names one message lists.
_SHOWN_AT_MOST: Final = 20


@dataclass(frozen=True, slots=True)
class ServedModel:
    """One model the server lists: its id, its context window in tokens when named, and what
    was wrong with a window it named that is not one (`None` when nothing was)."""

    id: str
    context_window: int | None = None
    window_problem: str | None = None


def listed_as(name: str, listed: Iterable[ServedModel]) -> ServedModel | None:
    """The listed model a request naming `name` is served by, or None: the one listed as
    `name`, else, as Ollama lists a model pulled without a tag (and serves it by its bare
    name), the one listed as `name:latest`.

    >>> listed_as("llama3", [ServedModel("llama3:latest")])
    ServedModel(id='llama3:latest', context_window=None, window_problem=None)
    >>> listed_as("llama3:8b", [ServedModel("llama3:latest")]) is None
    True
    """
    models = {model.id: model for model in listed}
    return models.get(name) or models.get(f"{name}:latest")


def served_models(listed: list[JsonValue]) -> list[ServedModel]:
    """The models of a `/v1/models` `data` list; entries without a string id are skipped.

    A window that is not a whole number of tokens from 1 to 2^32 is read as not named, and
    `window_problem` says what it was.

    >>> listed = [{"id": "m", "max_model_len": 4096}, {"id": "n", "max_model_len": "8k"}]
    >>> named, text = served_models(listed)
    >>> named
    ServedModel(id='m', context_window=4096, window_problem=None)
    >>> text.context_window, text.window_problem
    (None, "/v1/models names max_model_len '8k', not a whole number of tokens")
    """
    models: list[ServedModel] = []
    for item in listed:
        if not isinstance(item, dict):
            continue
        model_id = item.get("id")
        if not isinstance(model_id, str):
            continue
        window = item.get(WINDOW_KEY)
        if window is None or (type(window) is int and 0 < window <= MAX_CONTEXT_WINDOW):
            models.append(ServedModel(model_id, window))
        else:
            models.append(ServedModel(model_id, None, _window_problem(window)))
    return models


def unserved(names: tuple[str, ...], listed: list[ServedModel], where: str) -> str | None:
    """What is wrong when a traffic mix names models `/v1/models` at `where` does not list
    (LoRA adapters are listed there the same as models; see `listed_as`), or None when it lists
    them all.

    >>> unserved(("a", "b", "c"), [ServedModel("a"), ServedModel("x")], "http://h:1")
    "models of --model not served at http://h:1: 'b', 'c'; it serves: 'a', 'x'"
    >>> unserved(("a", "b"), [ServedModel("a:latest"), ServedModel("b")], "http://h:1") is None
    True
    """
    missing = [name for name in names if listed_as(name, listed) is None]
    if not missing:
        return None
    offered = _offered(listed)
    some = "models" if len(missing) > 1 else "model"
    names_text = ", ".join(repr(name) for name in missing[:_SHOWN_AT_MOST])
    return printable(f"{some} of --model not served at {where}: {names_text}; it serves: {offered}")


@dataclass(frozen=True, slots=True)
class RowModels:
    """The models a data file's rows name (its `model` column), which the server must list as
    it must list a mix's: `named` gives each naming row's model and number, in file order and
    repeats included, every time it is iterated; `origin` says where they come from (`--data
    rows`) and `unit` what a row's number counts (`line`, `item`, `row`)."""

    origin: str
    unit: str
    named: Iterable[tuple[str, int]]


def unserved_rows(
    rows: RowModels, listed: list[ServedModel], where: str, run_model: str | None = None
) -> str | None:
    """What is wrong when rows name models `/v1/models` at `where` does not list, each with the
    row that first names it, or None when it lists them all. A row naming `run_model` (the
    run's own `--model`) passes as that model does: one model given alone is used as given.

    The rows are walked once against the listed names, and only the first `_SHOWN_AT_MOST`
    names not listed are kept (the rows naming others are counted): whatever the file's size
    and however many names it holds, the check builds no set but the listing's.

    >>> rows = RowModels("--data rows", "line", [("m", 1), ("nope", 3), ("nope", 4)])
    >>> unserved_rows(rows, [ServedModel("m")], "http://h:1")
    "models named by --data rows not served at http://h:1: 'nope' (first at line 3); it serves: 'm'"
    >>> unserved_rows(rows, [ServedModel("m"), ServedModel("nope")], "http://h:1") is None
    True
    >>> unserved_rows(rows, [ServedModel("m")], "http://h:1", run_model="nope") is None
    True
    """
    served = {model.id for model in listed}
    served.update(model.id.removesuffix(":latest") for model in listed)  # as `listed_as` does
    if run_model is not None:
        served.add(run_model)
    missing: dict[str, int] = {}
    others = 0  # rows naming a model not listed beyond the names kept
    for name, number in rows.named:
        if name in served or name in missing:
            continue
        if len(missing) < _SHOWN_AT_MOST:
            missing[name] = number
        else:
            others += 1
    if not missing:
        return None
    names_text = ", ".join(
        f"{name!r} (first at {rows.unit} {number})" for name, number in missing.items()
    )
    if others:
        names_text += f" and more in {others:,} other {rows.unit}{'s' if others > 1 else ''}"
    return printable(
        f"models named by {rows.origin} not served at {where}: {names_text}; "
        f"it serves: {_offered(listed)}"
    )


def _offered(listed: list[ServedModel]) -> str:
    """The models a server lists, as a message names them (the first `_SHOWN_AT_MOST`)."""
    offered = ", ".join(repr(model.id) for model in listed[:_SHOWN_AT_MOST]) or "none"
    if len(listed) > _SHOWN_AT_MOST:
        offered += f" and {len(listed) - _SHOWN_AT_MOST} more"
    return offered


def _window_problem(window: JsonValue) -> str:
    """Why a named `max_model_len` is not a window."""
    if type(window) is not int:
        shown = printable(repr(window)[:40])
        return f"/v1/models names {WINDOW_KEY} {shown}, not a whole number of tokens"
    if window > MAX_CONTEXT_WINDOW:
        return f"/v1/models names {WINDOW_KEY} {window:.3g}, above any model's (2^32 at most)"
    return f"/v1/models names {WINDOW_KEY} {window}, not a window of at least one token"


__all__ = [
    "WINDOW_KEY",
    "RowModels",
    "ServedModel",
    "listed_as",
    "served_models",
    "unserved",
    "unserved_rows",
]
