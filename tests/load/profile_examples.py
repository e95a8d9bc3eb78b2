"""Each profile at its smallest, built from the example its every required parameter declares
(`Field(examples=[...])` in `assay.spec.load`), so the tests that run every profile need no row
for a new one: a required parameter without an example fails them, naming it."""

from __future__ import annotations

import typing
from typing import Annotated, Any

from pydantic import BaseModel, Field, TypeAdapter

from assay.spec.flat import flattened
from assay.spec.load import Profile, ProfileKind, StepLoad

MEMBERS: dict[str, type[BaseModel]] = {
    typing.get_args(member.model_fields["kind"].annotation)[0]: member
    for member in typing.get_args(typing.get_args(Profile)[0])
}
"""The profiles of the union, by kind."""

STEP_KINDS: frozenset[str] = frozenset(
    member.model_fields["kind"].default for member in typing.get_args(StepLoad)
)
"""The kinds that are one step each (not a sweep or a search, whose steps are the others')."""

_PROFILE: TypeAdapter[Profile] = TypeAdapter(Profile)
_STEP_LOAD: TypeAdapter[StepLoad] = TypeAdapter(Annotated[StepLoad, Field(discriminator="kind")])


def required_examples(kind: ProfileKind) -> dict[str, Any]:
    """The required parameters of profile `kind`, each at the first example it declares."""
    member = MEMBERS[kind]
    examples: dict[str, Any] = {}
    for name, field in member.model_fields.items():
        if field.is_required():
            assert field.examples, (
                f"{member.__name__}.{name} is required: declare an example value for the tests "
                "(Field(examples=[...]))"
            )
            examples[name] = field.examples[0]
    return examples


def example_profile(kind: ProfileKind) -> Profile:
    """Profile `kind` with its required parameters at their examples, the others at defaults.

    >>> example_profile("concurrent")
    Concurrent(kind='concurrent', streams=4)
    """
    return _PROFILE.validate_python({"kind": kind, **required_examples(kind)})


def example_step_load(kind: ProfileKind, **update: object) -> StepLoad:
    """`example_profile(kind)` of a step kind (`STEP_KINDS`) as a `StepLoad`, with `update`.

    >>> example_step_load("constant", burstiness=0.5)
    Constant(kind='constant', rate=100.0, burstiness=0.5)
    """
    return _STEP_LOAD.validate_python({"kind": kind, **required_examples(kind), **update})


def example_flat_keys(kind: ProfileKind) -> dict[str, Any]:
    """The flat keys (`assay run` flags, a config file's keys) of `example_profile(kind)`.

    >>> example_flat_keys("concurrent")
    {'profile': 'concurrent', 'concurrency': 4}
    """
    return flattened({"load": {"kind": kind, **required_examples(kind)}})
