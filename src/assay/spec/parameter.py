"""What a profile's parameter means outside its model, declared on the field beside its type
(`Annotated[int, Figure("requested_rate")]`), so the places that read it need no row per
profile: the step figure report.json keeps it as (`Figure`, read back by
`assay.spec.load.stored_load`), and how an error asks for it when it is required and missing
(`Asked`, worded by `assay.spec.flat`).

A required parameter also declares an example value (`Field(examples=[...])`): the tests build
each profile's smallest config from them, so a new profile needs no test row of its own.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, TypeAlias

from pydantic.fields import FieldInfo

StepFigure: TypeAlias = Literal["requested_rate", "requested_concurrency", "ramp", "burstiness"]
"""The figures of a step in report.json that name the load it offered."""


@dataclass(frozen=True, slots=True)
class Figure:
    """The step figure report.json keeps this parameter as (a constant's `rate` is its step's
    `requested_rate`); a parameter without one is not kept, and reads back as its default."""

    name: StepFigure


@dataclass(frozen=True, slots=True)
class Asked:
    """How an error asks for this parameter when it is required and was not given:
    `what (--flag METAVAR)`, or `--flag METAVAR` without `what`. `flag` names the flag when it
    is not the parameter's own key's (a capacity search's SLOs are usually `--slo`'s); an
    `int` parameter without `Asked` is asked for as `--flag N`."""

    metavar: str
    what: str = ""
    flag: str = ""


def figure_of(field: FieldInfo) -> StepFigure | None:
    """The step figure `field` is kept as, None when it is not kept."""
    return next((item.name for item in field.metadata if isinstance(item, Figure)), None)


def asked_of(field: FieldInfo) -> Asked | None:
    """How an error asks for `field`, None when it declares nothing."""
    return next((item for item in field.metadata if isinstance(item, Asked)), None)


__all__ = ["Asked", "Figure", "StepFigure", "asked_of", "figure_of"]
