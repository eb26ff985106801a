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
