"""A practical subset of JSON Schema, enough to tell whether JSON-mode output has the asked shape.

Supported keywords: `type` (a name or a list), `enum`, `const`, `properties`, `required`,
`additionalProperties` (`false` or a schema), `items` (one schema). Other keywords are ignored,
so a schema using them is checked only as far as this subset goes: a miss, never a false alarm.
"""

from __future__ import annotations

from collections.abc import Mapping

from pydantic import JsonValue


def schema_violation(
    instance: object, schema: Mapping[str, JsonValue], path: str = "$"
) -> str | None:
    """The first place where `instance` breaks `schema`, described, or `None` when it conforms.

    >>> schema = {"type": "object", "required": ["name"],
    ...           "properties": {"name": {"type": "string"}}}
    >>> schema_violation({"name": 3}, schema)
    '$.name: expected string, got integer 3'
    >>> schema_violation({"name": "ok"}, schema) is None
    True
    """
    expected = schema.get("type")
    if expected is not None:
        names = [expected] if isinstance(expected, str) else expected
        if isinstance(names, list) and not any(
            isinstance(name, str) and _has_type(instance, name) for name in names
        ):
            wanted = " or ".join(str(name) for name in names)
            return f"{path}: expected {wanted}, got {describe_json_value(instance)}"
    enum = schema.get("enum")
    if isinstance(enum, list) and not any(_same(instance, option) for option in enum):
        return f"{path}: {describe_json_value(instance)} is not one of {enum!r}"
    if "const" in schema and not _same(instance, schema["const"]):
        return f"{path}: {describe_json_value(instance)} is not the constant {schema['const']!r}"
    if isinstance(instance, dict):
        return _object_violation(instance, schema, path)
    if isinstance(instance, list):
        items = schema.get("items")
        if isinstance(items, dict):
            for index, item in enumerate(instance):
                problem = schema_violation(item, items, f"{path}[{index}]")
                if problem is not None:
                    return problem
    return None


def _object_violation(
    instance: dict[object, object], schema: Mapping[str, JsonValue], path: str
) -> str | None:
    required = schema.get("required")
    if isinstance(required, list):
        missing = [name for name in required if isinstance(name, str) and name not in instance]
        if missing:
            return f"{path}: missing required propert{'y' if len(missing) == 1 else 'ies'} " + (
                ", ".join(repr(name) for name in missing)
            )
    properties = schema.get("properties")
    known = properties if isinstance(properties, dict) else {}
    extra = schema.get("additionalProperties")
    for key, value in instance.items():
        name = str(key)
        sub = known.get(name)
        if isinstance(sub, dict):
            problem = schema_violation(value, sub, f"{path}.{name}")
        elif name in known:
            problem = None
        elif extra is False:
            problem = f"{path}: unexpected property {name!r} (additionalProperties is false)"
        elif isinstance(extra, dict):
            problem = schema_violation(value, extra, f"{path}.{name}")
        else:
            problem = None
        if problem is not None:
            return problem
    return None


def _has_type(instance: object, name: str) -> bool:
    match name:
        case "object":
            return isinstance(instance, dict)
        case "array":
            return isinstance(instance, list)
        case "string":
            return isinstance(instance, str)
        case "boolean":
            return isinstance(instance, bool)
        case "null":
            return instance is None
        case "integer":
            # JSON Schema counts 2.0 as an integer; bool is not a number in JSON.
            return not isinstance(instance, bool) and (
                isinstance(instance, int) or (isinstance(instance, float) and instance.is_integer())
            )
        case "number":
            return not isinstance(instance, bool) and isinstance(instance, int | float)
        case _:
            # An unknown type name is outside the subset: accept rather than raise a false alarm.
            return True


def _same(instance: object, option: object) -> bool:
    # 1 == True and 1 == 1.0 in Python; in JSON only the second holds.
    if isinstance(instance, bool) or isinstance(option, bool):
        return type(instance) is type(option) and instance == option
    if isinstance(instance, int | float) and isinstance(option, int | float):
        return instance == option
    return type(instance) is type(option) and instance == option


def describe_json_value(instance: object) -> str:
    """A JSON-flavoured description of a parsed value, for messages.

    >>> describe_json_value(True), describe_json_value([1]), describe_json_value(2.5)
    ('boolean true', 'array', 'number 2.5')
    """
    for name in ("null", "boolean", "integer", "number", "string", "array", "object"):
        if _has_type(instance, name):
            if name in ("array", "object"):
                return name
            text = repr(instance) if name == "string" else _json_literal(instance)
            return f"{name} {text[:40]}"
    return type(instance).__name__


def _json_literal(instance: object) -> str:
    if instance is None:
        return "null"
    if isinstance(instance, bool):
        return "true" if instance else "false"
    return str(instance)
