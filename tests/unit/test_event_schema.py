"""The shipped event schema is generated from the models: never edited by hand, never stale."""

from __future__ import annotations

import json

import jsonschema

from evalrunner.event import event_schema
from evalrunner.event_schema import SHIPPED, build_event_schema, render
from evalrunner.targets.registry import available


def test_shipped_schema_is_the_generated_one() -> None:
    assert SHIPPED.read_text("utf-8") == render(), (
        "evalrunner/schemas/event.schema.json is stale: run `python -m evalrunner.event_schema`"
    )


def test_generated_schema_is_valid_json_schema() -> None:
    jsonschema.Draft202012Validator.check_schema(build_event_schema())
    jsonschema.Draft202012Validator.check_schema(event_schema())


def test_every_registered_kind_is_one_variant_of_the_target() -> None:
    schema = build_event_schema()
    variants = schema["$defs"]["target"]["oneOf"]
    assert len(variants) == len(available())
    for variant, cls in zip(variants, available().values(), strict=True):
        refs = [r["$ref"].rsplit("/", 1)[1] for r in variant["allOf"]]
        assert refs[0] == "common"
        assert cls.kind in schema["$defs"][refs[-1]]["properties"]
    openai = schema["$defs"]["openai"]["properties"]["openai"]
    assert openai["required"] == ["base_url", "model"] and openai["additionalProperties"] is False
    assert json.loads(render()) == schema


def test_the_parsed_event_carries_the_typed_target() -> None:
    from evalrunner.event import parse_event
    from evalrunner.targets.http import HttpSpec

    raw = {
        "key": "test-suites/a.csv",
        "iterations": 1,
        "target": {"url": "http://127.0.0.1:9/ask", "max_retries": 2.0, "answer_path": "a.b"},
    }
    parsed = parse_event(raw)
    spec = parsed.target_spec
    assert isinstance(spec, HttpSpec)
    assert (spec.max_retries, spec.method, spec.timeout_seconds, spec.answer_path) == (
        2,
        "POST",
        60.0,
        "a.b",
    )
    assert parsed.target == raw["target"]  # the manifest still carries the event's JSON


def test_pydantic_errors_read_like_the_schema_s() -> None:
    import pytest
    from pydantic import ValidationError

    from evalrunner.event import pydantic_problems
    from evalrunner.event_schema import EventSpec

    with pytest.raises(ValidationError) as info:
        EventSpec.model_validate(
            {"key": "", "iterations": 1, "target": {"url": "ftp://x", "timeout_seconds": 0}}
        )
    lines = pydantic_problems(info.value)
    assert lines[0].startswith("key: ")
    assert any(line.startswith("target.url: ") for line in lines)  # no ".url.url"
    assert any(line.startswith("target.timeout_seconds: ") for line in lines)
    with pytest.raises(ValidationError) as info:
        EventSpec.model_validate({"key": "k", "iterations": 1, "target": {"x": 1}})
    assert pydantic_problems(info.value)[0].startswith("target: ")
