"""Frozen models built from values assay typed itself, without running pydantic's validation.

The hot path builds a response, its timing, its usage and its record for every request. Their
inputs are already of the declared types (ints checked by `type(...) is int`, tuples assay made,
other frozen models), so validating them again costs microseconds per request and checks
nothing. `model_construct` skips validation too but is slower than validating on pydantic 2.14,
because it walks the fields in Python; `trusted` sets the instance state directly, as
`model_construct` does at its end, through the slots' own setters (an `object.__setattr__` looks
the name up on the type each time). Data from outside keeps going through validation.
"""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel
from returns.primitives.container import BaseContainer
from returns.result import Success

ModelT = TypeVar("ModelT", bound=BaseModel)
ValueT = TypeVar("ValueT")

_new = object.__new__
# The setters of the four slots every pydantic model instance holds (`BaseModel.__slots__`).
_set_dict = BaseModel.__dict__["__dict__"].__set__
_set_fields_set = BaseModel.__dict__["__pydantic_fields_set__"].__set__
_set_extra = BaseModel.__dict__["__pydantic_extra__"].__set__
_set_private = BaseModel.__dict__["__pydantic_private__"].__set__
# Per model, the set of its declared field names: every instance `trusted` builds with all of
# them shares it, instead of a new set per instance. Sharing is safe: pydantic copies the set
# when it copies a model (`model_copy`), and the one change it makes in place, adding a field
# name on assignment, adds a name already there.
_all_fields: dict[type[BaseModel], set[str]] = {}
# The setter of the one slot a `Success` sets (`BaseContainer.__slots__`).
_set_inner = BaseContainer.__dict__["_inner_value"].__set__


def trusted(model: type[ModelT], fields: dict[str, object]) -> ModelT:
    """`model` holding `fields` as given: every declared field, in declaration order.

    The caller guarantees the types; a test per call site checks that the result equals, and
    serializes like, the validated model.

    >>> from assay.core.response import Usage
    >>> usage = trusted(Usage, {"prompt_tokens": 3, "completion_tokens": 2,
    ...     "reasoning_tokens": None, "cached_tokens": None, "total_tokens": 5})
    >>> usage == Usage(prompt_tokens=3, completion_tokens=2, total_tokens=5)
    True
    """
    built = _new(model)
    _set_dict(built, fields)
    names = _all_fields.get(model)
    if names is None:
        names = _all_fields[model] = set(model.__pydantic_fields__)
    _set_fields_set(built, names if len(fields) == len(names) else set(fields))
    _set_extra(built, None)
    _set_private(built, None)
    return built


def success(value: ValueT) -> Success[ValueT]:
    """`Success(value)`, the same object, without its two constructors in Python (`Success`'s
    and `BaseContainer`'s, which set this one slot): built once per answer.

    >>> success(3) == Success(3), type(success(3)) is Success
    (True, True)
    """
    built: Success[Any] = _new(Success)
    _set_inner(built, value)
    return built


__all__ = ["success", "trusted"]
