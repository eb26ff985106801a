"""pydantic's errors on :class:`evalrunner.event_schema.EventSpec`, worded as users know them.

The event is validated by its model alone; its messages stay the JSON Schema wording users
have read since the first release (``iterations: 0 is less than the minimum of 1``,
``target.agentId: 'x' does not match '^...$'``, ``event: unknown field 'x'; valid fields:
...``), in the same order (by field path, a target's own problems after the event's). This
module is the one translation; the rules themselves live on the models.
"""

from __future__ import annotations

import math
import types
import typing
from collections.abc import Mapping, Sequence
from functools import cache
from typing import Any

from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from evalrunner.event_schema import EventSpec

#: pydantic's type errors and the JSON Schema type each one means.
_TYPES = {
    "string_type": "string",
    "int_type": "integer",
    "int_from_float": "integer",
    "float_type": "number",
    "bool_type": "boolean",
    "list_type": "array",
    "dict_type": "object",
    "model_type": "object",
    "model_attributes_type": "object",
}

#: Hints added to a field's message: what a newcomer most often gets wrong there.
HINTS = {
    "iterations": "iterations must be a whole number of at least 1, written without quotes, "
    'e.g. "iterations": 2 (there is no default)',
}

#: pydantic's bounds errors: (JSON Schema wording, the ctx key holding the bound).
_BOUNDS = {
    "greater_than_equal": ("is less than the minimum of", "ge"),
    "greater_than": ("is less than or equal to the minimum of", "gt"),
    "less_than_equal": ("is greater than the maximum of", "le"),
    "less_than": ("is greater than or equal to the maximum of", "lt"),
}


def where(path: Sequence[Any]) -> str:
    """A field path as users write it (``target.headers.X``), ``event`` for the whole."""
    parts = [str(p) for p in path]
    return ".".join(parts) if parts else "event"


def unknown_fields(place: str, extra: list[str], allowed: list[str]) -> str:
    return (
        f"{place}: unknown field{'s' if len(extra) > 1 else ''} "
        f"{', '.join(repr(k) for k in extra)}; valid fields: {', '.join(allowed)} "
        "(see 'evalrunner schema event')"
    )


def _wording(err: ErrorDetails, schema: dict[str, Any]) -> list[str]:
    """What is wrong with one value, in JSON Schema's words (pydantic's own otherwise), one
    line per keyword of the field's ``schema`` it breaks, in the schema's order."""
    kind, value, ctx = err["type"], err.get("input"), err.get("ctx") or {}
    if kind in _BOUNDS:
        if isinstance(value, float) and math.isnan(value):
            return []  # NaN is within every bound for the schema; the rules refuse it
        return [_bound(value, kind, ctx[_BOUNDS[kind][1]])]
    if kind in _TYPES:
        lines = [f"{value!r} is not of type {_TYPES[kind]!r}"]
        if kind == "int_type" and isinstance(value, float):  # 1.5 is a number: bounds apply
            bounds = [(k, schema[k]) for k in _SCHEMA_BOUNDS if k in schema]
            lines += [_bound(value, k, b) for k, b in bounds if _breaks(value, k, b)]
        return lines
    if kind == "string_pattern_mismatch":
        return [f"{value!r} does not match {ctx['pattern']!r}"]
    if kind in ("string_too_short", "too_short") and ctx.get("min_length") == 1:
        return [f"{value!r} should be non-empty"]
    if kind == "string_too_short":
        return [f"{value!r} is too short"]
    if kind == "too_long":
        return [f"{value!r} is too long"]
    if kind == "literal_error":
        options = f"{value!r} is not one of [{str(ctx['expected']).replace(' or ', ', ')}]"
        if schema.get("type") == "string" and not isinstance(value, str):
            return [f"{value!r} is not of type 'string'", options]
        return [options]
    return err["msg"].split("\n")


#: The schema's bound keywords, in the order it checks them, and pydantic's error for each.
_SCHEMA_BOUNDS = {
    "minimum": "greater_than_equal",
    "exclusiveMinimum": "greater_than",
    "maximum": "less_than_equal",
    "exclusiveMaximum": "less_than",
}


def _bound(value: Any, kind: str, bound: Any) -> str:
    """``value`` breaking ``bound`` (a pydantic error type or a schema keyword), worded."""
    words = _BOUNDS[_SCHEMA_BOUNDS.get(kind, kind)][0]
    if isinstance(bound, float) and bound.is_integer():
        bound = int(bound)  # the schema says 0, not 0.0
    return f"{value!r} {words} {bound!r}"


def _breaks(value: float, kind: str, bound: float) -> bool:
    """Whether ``value`` is outside the schema keyword ``kind``'s ``bound``."""
    return {
        "minimum": value < bound,
        "exclusiveMinimum": value <= bound,
        "maximum": value > bound,
        "exclusiveMaximum": value >= bound,
    }[kind]


@cache
def _properties(model: type[BaseModel]) -> dict[str, Any]:
    properties: dict[str, Any] = model.model_json_schema().get("properties", {})
    return properties


def _field_schema(root: type[BaseModel] | None, loc: Sequence[Any]) -> dict[str, Any]:
    """The JSON Schema of the model field at ``loc`` (its non-null option), or {}."""
    parent = _model_at(root, loc[:-1]) if root is not None and loc else None
    node = _properties(parent).get(str(loc[-1]), {}) if parent is not None else {}
    options = [o for o in node.get("anyOf", [node]) if o != {"type": "null"}]
    return options[0] if len(options) == 1 and isinstance(options[0], dict) else {}


def _fields(model: type[BaseModel]) -> list[str]:
    return list(model.model_fields)


def _model_of(annotation: Any) -> type[BaseModel] | None:
    """The model a field holds (``Options | None`` -> Options), or None."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    if typing.get_origin(annotation) in (typing.Union, types.UnionType, typing.Annotated, list):
        for arg in typing.get_args(annotation):
            found = _model_of(arg)
            if found is not None:
                return found
    return None


def _model_at(root: type[BaseModel], path: Sequence[Any]) -> type[BaseModel] | None:
    model: type[BaseModel] | None = root
    for part in path:
        if isinstance(part, int) and model is not None:
            continue  # an item of a list of models
        if model is None or part not in model.model_fields:
            return None
        model = _model_of(model.model_fields[part].annotation)
    return model


def event_problems(exc: ValidationError, kinds: Mapping[str, type[BaseModel]]) -> list[str]:
    """The event model's errors, one line each, as the JSON Schema reported them: the
    event's own fields by path, then the target's (its kind tag dropped from the path, its
    unknown fields last), then what the cross-field rules found, in their order.
    ``kinds``: each target kind's spec model, by kind key."""
    # (path, rank, line): JSON Schema's error path, a missing field's being its object's;
    # at one path the missing fields come first, then unknown fields, then the rest
    top: list[tuple[list[Any], int, str]] = []
    target: list[tuple[list[Any], int, str]] = []
    target_extra: list[str] = []
    extras: dict[tuple[Any, ...], list[str]] = {}
    rules: list[str] = []  # the cross-field rules' lines, after the fields' own
    kind = ""
    for err in exc.errors():
        if err["type"] == "event_rule":
            rules.append(str((err.get("ctx") or {})["reason"]))
            continue
        loc = list(err["loc"])
        in_target = loc[:1] == ["target"]
        if in_target and len(loc) > 1 and loc[1] in kinds:
            kind = str(loc.pop(1))
        if err["type"] == "extra_forbidden":
            extras.setdefault(tuple(loc[:-1]), []).append(str(loc[-1]))
            continue
        field = where(loc)
        if err["type"] == "missing":
            lines = [f"{field}: required field is missing"]
            key = (loc[:-1], 0)
        else:
            root = kinds.get(kind) if in_target else EventSpec
            lines = [f"{field}: {w}" for w in _wording(err, _field_schema(root, loc[in_target:]))]
            key = (loc, 2)
        for line in lines:
            hint = f" ({HINTS[field]})" if field in HINTS else ""
            (target if in_target else top).append((*key, line + hint))
    for parent, names in extras.items():
        path = list(parent)
        if path == ["target"]:
            allowed = _fields(kinds[kind])
            target_extra.append(unknown_fields(f"target ({kind} kind)", names, allowed))
            continue
        in_target = path[:1] == ["target"]
        model = _model_at(kinds[kind], path[1:]) if in_target else _model_at(EventSpec, path)
        allowed = _fields(model) if model is not None else []
        line = unknown_fields(where(path), names, allowed)
        (target if in_target else top).append((path, 1, line))

    def order(problem: tuple[list[Any], int, str]) -> tuple[list[str], int]:
        return [str(p) for p in problem[0]], problem[1]

    ordered = sorted(top, key=order) + sorted(target, key=order)
    return [line for _, _, line in ordered] + target_extra + rules
