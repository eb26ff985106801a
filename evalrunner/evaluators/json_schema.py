"""JSON schema: the answer must be JSON and, when a schema is given, match it.

The schema of a case is the suite column ``json_schema`` (``sample.metadata["json_schema"]``,
JSON text or an object); failing that, the run-wide ``schema`` option. ``{}`` (or ``true``)
means "must parse as JSON". A case with neither is skipped.

Parsing is strict JSON (RFC 8259: no ``NaN``/``Infinity``, no trailing commas). One courtesy:
an answer wrapped in a Markdown fence (```` ```json ... ``` ```` or a bare ```` ``` ````) is
unwrapped first, and the reason says so. Anything else around the JSON (prose before or
after) makes it invalid: the point is output a program can parse.

Validation uses the draft named by the schema's ``$schema`` (Draft 2020-12 when absent) via
``jsonschema``, with format assertions on (``"format": "email"`` is checked; turn off with
``check_formats: false``). ``pattern`` and ``patternProperties`` run on the ``regex`` module
with a timeout, so a backtracking pattern cannot hang a run on a hostile answer.

Metrics (pass/fail, threshold 0.5): ``Valid JSON`` and ``Schema valid`` (primary; its reason
lists up to three validation errors with their JSON paths, e.g. ``$.items[0].price``).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from functools import lru_cache
from itertools import islice
from typing import TYPE_CHECKING, Any

import regex
from pydantic import BaseModel, ConfigDict, Field, field_validator

from evalrunner.evaluators.base import Evaluator, Input, MetricSpec, Sample, Scored, SkipCase
from evalrunner.evaluators.registry import register

# jsonschema is imported where a schema is checked or applied, not here: the registry imports
# this module for every run, and jsonschema's import loads every draft's metaschema from disk
# (~0.2-0.4 s of a run that selects no JSON metric, issue 31).
if TYPE_CHECKING:
    from jsonschema import ValidationError
    from jsonschema.protocols import Validator

#: Where this module's evaluators come in the catalog (see evaluators.registry).
CATALOG_POSITION = 50

_VALID = "Valid JSON"
_SCHEMA = "Schema valid"
_COLUMN = "json_schema"
#: Validation errors named in a reason; errors counted at most (bounds the work).
_SHOWN_ERRORS = 3
_COUNTED_ERRORS = 50
_REGEX_TIMEOUT = 0.05


def _short(value: str, limit: int = 100) -> str:
    value = " ".join(value.split())
    return value if len(value) <= limit else value[: limit - 1] + "…"


# --- Safe regex keywords ----------------------------------------------------------------------


@lru_cache(maxsize=512)
def _compiled(pattern: str) -> regex.Pattern[str]:
    return regex.compile(pattern)


def _search(pattern: str, text: str) -> bool | str:
    """True/False, or a message when the pattern cannot be applied (bad or too slow)."""
    try:
        return _compiled(pattern).search(text, timeout=_REGEX_TIMEOUT) is not None
    except TimeoutError:
        return f"pattern {_short(pattern, 40)!r} timed out on {_short(text, 40)!r}"
    except regex.error as exc:
        return f"pattern {_short(pattern, 40)!r} cannot be compiled: {exc}"


def _pattern(
    validator: Validator, patrn: str, instance: Any, schema: Any
) -> Iterator[ValidationError]:
    from jsonschema import ValidationError

    if validator.is_type(instance, "string"):
        found = _search(patrn, instance)
        if isinstance(found, str):
            yield ValidationError(found)
        elif not found:
            yield ValidationError(f"{_short(repr(instance), 60)} does not match {patrn!r}")


def _pattern_properties(
    validator: Validator, patterns: dict[str, Any], instance: Any, schema: Any
) -> Iterator[ValidationError]:
    from jsonschema import ValidationError

    if not validator.is_type(instance, "object"):
        return
    for patrn, subschema in patterns.items():
        for key, value in instance.items():
            found = _search(patrn, key)
            if isinstance(found, str):
                yield ValidationError(found)
            elif found:
                yield from validator.descend(value, subschema, path=key, schema_path=patrn)


@lru_cache(maxsize=16)
def _safe_class(base: type[Validator]) -> type[Validator]:
    from jsonschema.validators import extend

    # jsonschema ships no type information: its functions return Any, typed here
    safe: type[Validator] = extend(
        base, {"pattern": _pattern, "patternProperties": _pattern_properties}
    )
    return safe


def _base_class(schema: Any) -> type[Validator]:
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import SchemaError
    from jsonschema.validators import validator_for

    if isinstance(schema, dict) and "$schema" in schema:
        cls: type[Validator] | None = validator_for(schema, default=None)
        if cls is None:
            raise SchemaError(f"unknown $schema {_short(str(schema['$schema']), 80)!r}")
        return cls
    default: type[Validator] = Draft202012Validator
    return default


def schema_problem(schema: Any) -> str | None:
    """Why ``schema`` is not a usable JSON Schema, or None when it is."""
    if not isinstance(schema, dict | bool):
        return f"must be a JSON object (or true/false), not {_json_type(schema)}"
    from jsonschema.exceptions import SchemaError

    try:
        _base_class(schema).check_schema(schema)
    except SchemaError as exc:
        where = f" at {exc.json_path}" if exc.path else ""
        return f"is not a valid JSON Schema: {_short(exc.message)}{where}"
    return None


@lru_cache(maxsize=256)
def _validator(canonical: str, check_formats: bool) -> Validator:
    schema = json.loads(canonical)
    base = _base_class(schema)
    checker = base.FORMAT_CHECKER if check_formats else None
    # jsonschema ships no types, so ``type[Validator]`` is ``type[Any]``, which mypy does not
    # count as Hashable; a class is hashable
    safe = _safe_class(base)  # type: ignore[arg-type]
    return safe(schema, format_checker=checker)


def _json_type(value: Any) -> str:
    if isinstance(value, dict):
        return f"an object with {len(value)} key{'s' if len(value) != 1 else ''}"
    if isinstance(value, list):
        return f"an array of {len(value)} item{'s' if len(value) != 1 else ''}"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, bool):
        return "a boolean"
    if value is None:
        return "null"
    if isinstance(value, int | float):
        return "a number"
    return type(value).__name__


# --- Parsing the answer -----------------------------------------------------------------------


def strip_fence(text: str) -> tuple[str, bool]:
    """Unwrap ```` ```json\\n...\\n``` ```` (or a bare fence) around the whole text.

    Written without a regex so that no input can make it slow.
    """
    s = text.strip()
    if not (s.startswith("```") and s.endswith("```")):
        return text, False
    newline = s.find("\n")
    if newline == -1 or newline + 1 > len(s) - 3:
        return text, False
    if s[3:newline].strip().casefold() not in ("", "json"):
        return text, False
    return s[newline + 1 : -3], True


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not allowed in JSON")


def parse_json(text: str) -> Any:
    """Strict JSON (no NaN/Infinity); raises ValueError with a short, located message."""
    try:
        return json.loads(text, parse_constant=_reject_constant)
    except json.JSONDecodeError as exc:
        near = _short(exc.doc[exc.pos : exc.pos + 30], 30)
        at = f" (near {near!r})" if near else ""
        raise ValueError(f"{exc.msg} at line {exc.lineno} column {exc.colno}{at}") from None
    except RecursionError:
        raise ValueError("nested too deeply to parse") from None


# --- The evaluator ----------------------------------------------------------------------------


class JsonSchemaOptions(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    #: The run's schema, for cases without a ``json_schema`` column; ``{}`` = must parse.
    json_schema: dict[str, Any] | bool | None = Field(default=None, alias="schema")
    #: Assert ``format`` (email, date-time, ...) rather than treat it as an annotation.
    check_formats: bool = True

    @field_validator("json_schema")
    @classmethod
    def _valid_schema(cls, value: dict[str, Any] | bool | None) -> dict[str, Any] | bool | None:
        if value is not None and (problem := schema_problem(value)) is not None:
            raise ValueError(f"the schema option {problem}")
        return value


def _case_schema(sample: Sample) -> tuple[Any, str | None]:
    """The case's own schema (parsed) and a problem with it; (None, None) when it has none."""
    raw = sample.metadata.get(_COLUMN)
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return None, None
    if isinstance(raw, str):
        return _load_schema(raw)
    try:
        text = json.dumps(raw, sort_keys=True)
    except (TypeError, ValueError) as exc:
        return None, f"{_COLUMN} is not JSON data: {exc}"
    return _load_schema(text)


@lru_cache(maxsize=512)
def _load_schema(text: str) -> tuple[Any, str | None]:
    # Cached: checking a schema against its metaschema costs far more than using it.
    try:
        schema = parse_json(text)
    except ValueError as exc:
        return None, f"{_COLUMN} is not valid JSON: {exc}"
    problem = schema_problem(schema)
    return schema, (f"{_COLUMN} {problem}" if problem else None)


@register
class JsonSchema(Evaluator[JsonSchemaOptions]):
    """Whether a structured answer parses as JSON and matches its schema (the case's
    ``json_schema`` column or the run's option), each error located by its JSON path.

    >>> sample = Sample(question="Who is this?", answer='```json\\n{"name": "Ada"}\\n```')
    >>> schema = {"type": "object", "required": ["name", "age"]}
    >>> for r in JsonSchema(options={"json_schema": schema}).evaluate(sample):
    ...     print(f"{r.metric}: {r.score:.2f} - {r.reason}")
    Valid JSON: 1.00 - parses as JSON (an object with 1 key); a ```json fence was stripped first
    Schema valid: 0.00 - 1 schema error against the run's schema: $: 'age' is a required property
    """

    name = "JSON schema"
    aliases = ("JSON Schema validation",)
    description = (
        "The answer must parse as JSON (a ```json fence is unwrapped) and match the case's "
        "json_schema column or the run's schema option."
    )
    inputs = frozenset({Input.ANSWER})
    metrics = (
        MetricSpec(_VALID, "the answer parses as JSON", threshold=0.5, kind="pass_fail"),
        MetricSpec(
            _SCHEMA,
            "the answer parses and matches the JSON schema",
            threshold=0.5,
            primary=True,
            kind="pass_fail",
        ),
    )

    @classmethod
    def check_case(cls, sample: Sample) -> list[str]:
        _, problem = _case_schema(sample)
        return [problem] if problem else []

    @classmethod
    def applies_to(cls, sample: Sample) -> bool:
        """In a default run, only suites with a per-case schema get it (a run-wide schema
        comes with evaluator_options, which keeps the evaluator selected)."""
        return _COLUMN in sample.metadata and sample.metadata[_COLUMN] not in (None, "")

    def score(self, sample: Sample) -> Mapping[str, Scored]:
        assert sample.answer is not None
        schema, problem = _case_schema(sample)
        if problem:
            raise ValueError(problem)
        source = f"the case's {_COLUMN}"
        if schema is None:
            schema, source = self.options.json_schema, "the run's schema"
        if schema is None:
            raise SkipCase(
                f"no JSON schema: fill the {_COLUMN} column or set the schema option "
                "({} checks only that the answer parses)"
            )

        text, fenced = strip_fence(sample.answer)
        fence = "; a ```json fence was stripped first" if fenced else ""
        if not text.strip():
            why = f"the answer is empty, not JSON{fence}"
            return {_VALID: Scored(0.0, why), _SCHEMA: Scored(0.0, why)}
        try:
            instance = parse_json(text)
        except ValueError as exc:
            return {
                _VALID: Scored(0.0, f"not valid JSON: {exc}{fence}"),
                _SCHEMA: Scored(0.0, "not valid JSON, so it cannot match the schema"),
            }
        parsed = Scored(1.0, f"parses as JSON ({_json_type(instance)}){fence}")
        if schema is True or schema == {}:
            return {_VALID: parsed, _SCHEMA: Scored(1.0, f"parses; {source} accepts any JSON")}
        return {_VALID: parsed, _SCHEMA: self._validate(instance, schema, source)}

    def _validate(self, instance: Any, schema: Any, source: str) -> Scored:
        from referencing.exceptions import Unresolvable

        canonical = json.dumps(schema, sort_keys=True)
        validator = _validator(canonical, self.options.check_formats)
        try:
            errors = list(islice(validator.iter_errors(instance), _COUNTED_ERRORS))
        except RecursionError:
            return Scored(0.0, "the answer is nested too deeply to validate")
        except Unresolvable as exc:
            raise ValueError(f"{source} cannot be applied: {exc}") from None
        if not errors:
            return Scored(1.0, f"matches {source}")
        # Shallowest first (a missing required key before a bad leaf), then by path.
        errors.sort(key=lambda e: (len(e.path), [(isinstance(p, str), p) for p in e.path]))
        count = f"{len(errors)}{'+' if len(errors) == _COUNTED_ERRORS else ''}"
        shown = "; ".join(f"{e.json_path}: {_short(e.message)}" for e in errors[:_SHOWN_ERRORS])
        plural = "s" if len(errors) != 1 else ""
        return Scored(0.0, f"{count} schema error{plural} against {source}: {shown}")
