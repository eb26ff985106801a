"""The project file's errors, one line each: ``evalrunner.toml:14: targets.prod.url: what is
wrong``, then how to fix it. Unknown keys are refused with the valid keys of that place."""

from __future__ import annotations

import json
import re
import types
from collections.abc import Sequence
from typing import Any, Union, get_args, get_origin

from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from evalrunner.project.model import ProjectFile
from evalrunner.project.source import KeyPath, ProjectSource
from evalrunner.targets import registry as target_registry


def file_problems(exc: ValidationError, source: ProjectSource) -> list[str]:
    """The project model's errors, located in ``source``."""
    return [_line(err, source) for err in exc.errors()]


def located(source: ProjectSource, path: KeyPath, message: str) -> str:
    """One problem at ``path`` of the file: ``file:line: key.path: message``."""
    key = key_path(path)
    return f"{source.where(path)}: {key + ': ' if key else ''}{message}"


def key_path(path: KeyPath) -> str:
    """A key path as a user writes it: ``targets.prod.url``, ``judge_metrics[1].name``,
    ``metrics."Token F1".threshold`` (a key that is not bare is quoted, as in TOML)."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
            continue
        name = part if re.fullmatch(r"[A-Za-z0-9_-]+", part) else json.dumps(part)
        out += f".{name}" if out else name
    return out


def _line(err: ErrorDetails, source: ProjectSource) -> str:
    loc: list[str | int] = list(err["loc"])
    kinds = target_registry.available()
    if loc[:1] == ["targets"] and len(loc) > 2 and loc[2] in kinds:
        kind = str(loc.pop(2))  # the union's branch: users wrote targets.prod.url
        model: type[BaseModel] | None = kinds[kind].spec_model
        model = _model_at(model, loc[2:-1])
    else:
        model = _model_at(ProjectFile, loc[:-1])
    if loc and loc[-1] == "[key]":  # a dict key is wrong, not its value
        loc.pop()
        return located(source, loc, f"{loc[-1]!r} is not a valid name: {_words(err)}")
    if err["type"] == "extra_forbidden":
        valid = ", ".join(_field_names(model)) if model is not None else ""
        hint = f"; valid keys here: {valid}" if valid else ""
        return located(source, loc, f"unknown key{hint}")
    if err["type"] == "missing":
        return located(source, loc, "required, but missing; add it")
    return located(source, loc, _words(err))


def _words(err: ErrorDetails) -> str:
    msg = err["msg"].removeprefix("Value error, ")
    value = err.get("input")
    if err["type"] == "string_pattern_mismatch":
        return "use letters, digits, '.', '_' and '-' (it names a report folder)"
    if isinstance(value, str | int | float | bool):
        shown = repr(value) if len(repr(value)) <= 60 else repr(value)[:57] + "..."
        if shown not in msg:
            msg += f" (got {shown})"
    return msg


def _field_names(model: type[BaseModel]) -> list[str]:
    return [f.alias or n for n, f in model.model_fields.items()]


def _model_at(model: type[BaseModel] | None, path: Sequence[Any]) -> type[BaseModel] | None:
    """The model that holds the keys at ``path`` below ``model`` (through dict values, list
    items and optional fields), or None."""
    for part in path:
        if model is None:
            return None
        if isinstance(part, str) and part in model.model_fields:
            model = _model_of(model.model_fields[part].annotation)
        elif isinstance(part, str | int):
            continue  # a dict key or a list index: the same model's items
    return model


def _model_of(annotation: Any) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    origin = get_origin(annotation)
    if origin in (Union, types.UnionType, list, dict) or origin is not None:
        for arg in reversed(get_args(annotation)):
            found = _model_of(arg)
            if found is not None:
                return found
    return None
