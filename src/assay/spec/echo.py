"""What report.json keeps under `run_config`: the run's settings as the run used them, flat,
under the keys of the `assay run` flags (`assay.spec.flat`), read leniently and written back as
they were read."""

from __future__ import annotations

import hashlib
import json
from types import UnionType
from typing import Annotated, Any, Self, get_args, get_origin

from annotated_types import BaseMetadata
from pydantic import (
    BaseModel,
    ConfigDict,
    JsonValue,
    ModelWrapValidatorHandler,
    PrivateAttr,
    SerializerFunctionWrapHandler,
    ValidationError,
    ValidationInfo,
    create_model,
    model_serializer,
    model_validator,
)
from pydantic.fields import FieldInfo

from assay.spec.constraints import Constraints
from assay.spec.flat import FLAT_KEYS, places_of
from assay.spec.limits import ECHOED_FIELD_BYTES
from assay.spec.load import ProfileKind


class _AsWritten(BaseModel):
    """A stored echo: read typed, written back as it was read.

    Only the keys it was given are written (a key an older report lacks is read as its default
    and not added), a key it does not know is kept, and a stored value it no longer accepts (a
    rule tightened since the report was written) is read as the default and written back as it
    was. Leniency is for stored JSON only: built in Python, a bad value is a bug and raises.
    """

    model_config = ConfigDict(frozen=True, extra="allow")

    _kept_as_written: dict[str, Any] = PrivateAttr(default_factory=dict)
    # The order of the keys as stored, when it is not the fields' order (an older writer's).
    _stored_order: tuple[str, ...] | None = PrivateAttr(default=None)

    @model_validator(mode="wrap")
    @classmethod
    def _read_leniently(
        cls, data: Any, handler: ModelWrapValidatorHandler[Self], info: ValidationInfo
    ) -> Self:
        stored = info.mode == "json" and isinstance(data, dict)
        try:
            echo = handler(data)
        except ValidationError as error:
            if not stored:
                raise
            refused = {
                str(problem["loc"][0])
                for problem in error.errors()
                if problem["loc"] and problem["loc"][0] in cls.model_fields
            }
            if not refused:
                raise
            echo = handler({key: value for key, value in data.items() if key not in refused})
            echo._kept_as_written = {key: data[key] for key in refused}
        if stored:
            known = [key for key in cls.model_fields if key in data]
            if tuple(data) != (*known, *(key for key in data if key not in cls.model_fields)):
                echo._stored_order = tuple(data)  # kept only when it is not the fields' order
        return echo

    @model_serializer(mode="wrap")
    def _write_as_read(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        dumped: dict[str, Any] = handler(self)
        kept = self._kept_as_written
        written = self.model_fields_set | kept.keys()
        values = {key: kept.get(key, value) for key, value in dumped.items() if key in written}
        if self._stored_order is None:
            return values
        # As stored, then whatever was set since (a revalidation's keys), in the fields' order.
        stored = [key for key in self._stored_order if key in values]
        since = [key for key in values if key not in self._stored_order]
        return {key: values[key] for key in (*stored, *since)}


class EchoedConstraints(_AsWritten, Constraints):
    """The constraints in force, as a report keeps them (older reports may name the
    `--stop-error-rate` limit `max_error_rate`: it is kept, under that name)."""

    model_config = ConfigDict(frozen=True, extra="allow")


def echoed_fields(fields: dict[str, JsonValue]) -> dict[str, JsonValue]:
    """`fields` as report.json keeps them: a value whose JSON is longer than
    `ECHOED_FIELD_BYTES` by its size and SHA-256, the others as they are.

    >>> echoed_fields({"top_k": 4, "blob": "x" * 5000})["blob"][:29]
    '(5,002 bytes of JSON, sha256 '
    """
    echoed: dict[str, JsonValue] = {}
    for key, value in fields.items():
        text = json.dumps(value, ensure_ascii=False).encode()
        echoed[key] = (
            value
            if len(text) <= ECHOED_FIELD_BYTES
            else f"({len(text):,} bytes of JSON, sha256 {hashlib.sha256(text).hexdigest()})"
        )
    return echoed


def settings_model(root: type[BaseModel]) -> type[BaseModel]:
    """A stored echo (`_AsWritten`) with a field for every flat key of `root`, in `FLAT_KEYS`
    order: the field of its place in `root`'s sections, so a new setting needs none of its own.
    A profile's parameter is the first profile's that has it, optional (default None) where
    that profile requires it: a run of another profile echoes it all the same."""
    fields: dict[str, Any] = {}
    for key in FLAT_KEYS:
        info = next(filter(None, (_field_at(root, path) for path in places_of(key))))
        if not info.is_required():
            fields[key] = (info.annotation, info)
            continue
        # Its bounds on the field (they then hold for a value, not for None), its validators
        # on the value.
        bounds = [item for item in info.metadata if isinstance(item, BaseMetadata)]
        checks = [item for item in info.metadata if not isinstance(item, BaseMetadata)]
        value: Any = Annotated[(info.annotation, *checks)] if checks else info.annotation
        fields[key] = (Annotated[(value | None, *bounds)] if bounds else value | None, None)
    # Any profile's kind, by default the default profile's.
    fields["profile"] = (ProfileKind, root.model_fields["load"].default.kind)
    return create_model("RunSettings", __base__=_AsWritten, **fields)


def _field_at(model: Any, path: tuple[str, ...]) -> FieldInfo | None:
    """The field at `path` below `model`, a model or a union of them (the first member's that
    has it)."""
    for member in get_args(model) if get_origin(model) is UnionType else (model,):
        info: FieldInfo | None = member.model_fields.get(path[0])
        if info is not None:
            return info if len(path) == 1 else _field_at(info.annotation, path[1:])
    return None


__all__ = ["EchoedConstraints", "echoed_fields", "settings_model"]
