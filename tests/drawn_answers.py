"""Answers of any kind, drawn from the answer types themselves: a test that draws them covers a
new kind of answer (a new type in `AnyAnswer`) without a row for it."""

from __future__ import annotations

from typing import Any, TypeVar, get_args, get_origin

from hypothesis import strategies as st
from pydantic import BaseModel

from assay.core.answer import AnyAnswer, answer_type
from assay.spec.endpoint import Answer

M = TypeVar("M", bound=BaseModel)

_SCALARS: dict[object, st.SearchStrategy[Any]] = {
    str: st.text(max_size=12),
    int: st.integers(min_value=0, max_value=10_000),
    float: st.floats(min_value=-1e6, max_value=1e6),
    bool: st.booleans(),
}


def drawn(annotation: object) -> st.SearchStrategy[Any]:
    """Values of a field's declared type: texts, small counts, flags, models with every field
    drawn, optional values and tuples of up to three."""
    scalar = _SCALARS.get(annotation)
    if scalar is not None:
        return scalar
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return models(annotation)
    args = get_args(annotation)
    if get_origin(annotation) is tuple:
        return st.lists(drawn(args[0]), max_size=3).map(tuple)
    if args:  # a union, `X | None` among them
        return st.one_of(*(st.none() if arg is type(None) else drawn(arg) for arg in args))
    raise TypeError(f"no strategy for a field of type {annotation!r}")


def models(model: type[M]) -> st.SearchStrategy[M]:
    """Instances of `model` with every field but an answer's `kind` drawn from its type."""
    fields = {name: drawn(f.annotation) for name, f in model.model_fields.items() if name != "kind"}
    return st.builds(model, **fields)


def answers(kind: Answer) -> st.SearchStrategy[AnyAnswer]:
    """Answers of `kind`, every field of it and of its summary drawn."""
    strategy: st.SearchStrategy[AnyAnswer] = models(answer_type(kind))
    return strategy


__all__ = ["answers", "drawn", "models"]
