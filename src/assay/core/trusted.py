"""Frozen models built from values assay typed itself, without running pydantic's validation.

The hot path builds a response, its timing, its usage and its record for every request. Their
inputs are already of the declared types (ints checked by `type(...) is int`, tuples assay made,
other frozen models), so validating them again costs microseconds per request and checks
nothing. `model_construct` skips validation too but is slower than validating on pydantic 2.14,
because it walks the fields in Python; `trusted` sets the instance state directly, as
`model_construct` does at its end. Data from outside keeps going through validation.
"""

from __future__ import annotations

from typing import TypeVar

from pydantic import BaseModel

ModelT = TypeVar("ModelT", bound=BaseModel)

_new = object.__new__
_set = object.__setattr__


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
    _set(built, "__dict__", fields)
    _set(built, "__pydantic_fields_set__", set(fields))
    _set(built, "__pydantic_extra__", None)
    _set(built, "__pydantic_private__", None)
    return built


__all__ = ["trusted"]
