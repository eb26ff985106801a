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


def _problems(raw: dict[str, object], **context: str) -> list[str]:
    import pytest
    from pydantic import ValidationError

    from evalrunner.event_messages import event_problems
    from evalrunner.event_schema import EventSpec
    from evalrunner.targets.registry import available

    with pytest.raises(ValidationError) as info:
        EventSpec.model_validate(raw, context=context or None)
    return event_problems(info.value, {k: c.spec_model for k, c in available().items()})


def test_the_event_model_alone_applies_every_rule_and_reports_all_at_once() -> None:
    """EventSpec is the whole definition: a Python caller validating with it gets the field
    errors and the cross-field rules together, worded as parse_event words them."""
    from evalrunner.event_schema import EventSpec

    target = {"lambdaArn": "fn"}
    lines = _problems({"key": "other/a.csv", "iterations": 0, "target": target, "metrics": ["x"]})
    assert lines[0].startswith("iterations: 0 is less than the minimum of 1 (")
    assert (
        lines[1]
        == "key: 'other/a.csv' must be under 'test-suites/', e.g. 'test-suites/my-suite.xlsx'"
    )
    assert lines[2].startswith("metric: unknown metric 'x'")
    assert len(lines) == 3
    # the suite prefix is the caller's (an upload trigger's bucket layout)
    spec = EventSpec.model_validate(
        {"key": "other/a.csv", "iterations": 1, "target": target, "metrics": ["BLEU"]},
        context={"suite_prefix": "other/"},
    )
    assert (spec.resolution.metrics, spec.resolution.metrics_explicit) == (["BLEU"], True)


def test_null_for_an_optional_field_is_refused_in_the_schema_s_words() -> None:
    base = {"key": "test-suites/a.csv", "iterations": 1}
    assert _problems({**base, "target": {"lambdaArn": "fn"}, "baseline": None}) == [
        "baseline: None is not of type 'string'"
    ]
    assert _problems({**base, "target": {"url": "http://127.0.0.1:9/", "method": None}}) == [
        "target.method: None is not one of ['POST', 'PUT']"
    ]
    assert _problems({**base, "target": {"lambdaArn": "fn", "metric": None}}) == [
        "target.metric: None is not valid under any of the given schemas"
    ]


def test_every_bound_reaches_the_schema_and_its_message() -> None:
    """An optional integer's bounds are JSON Schema keywords (not pydantic's ge/le, which a
    schema validator ignores), and breaking one reads like any other bound."""
    from evalrunner.event_schema import build_event_schema

    text = json.dumps(build_event_schema())
    assert not any(f'"{k}":' in text for k in ("ge", "le", "gt", "lt"))
    cases = build_event_schema()["properties"]["cases_per_task"]
    assert (cases["minimum"], cases["maximum"]) == (1, 1000)
    base = {"key": "test-suites/a.csv", "iterations": 1, "target": {"lambdaArn": "fn"}}
    assert _problems({**base, "cases_per_task": 0}) == [
        "cases_per_task: 0 is less than the minimum of 1"
    ]
    # a whole number written 2.0 is an integer; a bound it breaks names it as written
    assert _problems({**base, "max_text_chars": 2.0}) == [
        "max_text_chars: 2.0 is less than the minimum of 1000"
    ]
    assert _problems({**base, "max_text_chars": 1.5}) == [
        "max_text_chars: 1.5 is not of type 'integer'",
        "max_text_chars: 1.5 is less than the minimum of 1000",
    ]


def test_a_value_is_told_every_schema_keyword_it_breaks_and_only_those() -> None:
    """The schema's wording per keyword: an enum field with a type says both; NaN is within
    every bound for the schema, so only the rule against non-finite numbers speaks."""
    base = {"key": "test-suites/a.csv", "iterations": 1, "target": {"lambdaArn": "fn"}}
    assert _problems({**base, "fail_on": 0}) == [
        "fail_on: 0 is not of type 'string'",
        "fail_on: 0 is not one of ['failures', 'regressions', 'errors', 'never']",
    ]
    nan = float("nan")
    assert _problems({**base, "target": {"lambdaArn": "fn", "timeout_seconds": nan}}) == [
        "target.timeout_seconds: nan is not a finite number; write a plain number such as 0.5 "
        "(NaN, Infinity and -Infinity are not allowed)"
    ]


def test_the_run_event_is_the_parsed_spec_and_declares_no_event_field_again() -> None:
    from evalrunner.event import RunEvent, parse_event
    from evalrunner.event_schema import EventSpec
    from evalrunner.reports.verdict import FailOn

    raw = {
        "key": "test-suites/a.csv",
        "iterations": 2,
        "target": {"lambdaArn": "fn"},
        "metrics": ["BLEU"],
        "thresholds": {"BLEU": 0.2},
        "fail_on": "never",
    }
    parsed = parse_event(raw)
    assert isinstance(parsed.spec, EventSpec)
    assert (parsed.key, parsed.iterations, parsed.thresholds) == (raw["key"], 2, {"BLEU": 0.2})
    assert (parsed.metrics, parsed.metrics_explicit, parsed.policy.fail_on) == (
        ["BLEU"],
        True,
        FailOn.NEVER,
    )
    assert parsed.fail_under == {} and parsed.max_concurrency == 10
    shared = set(RunEvent.model_fields) & set(EventSpec.model_fields)
    # what the run adds: the raw target, the resolved selection, the capped concurrency
    assert shared == {"target", "metrics", "max_concurrency"}


def test_a_perturbation_is_as_strict_as_the_rest_of_the_event() -> None:
    base = {"key": "test-suites/a.csv", "iterations": 1, "target": {"lambdaArn": "fn"}}
    assert _problems({**base, "perturbations": [{"kind": "typos", "intensity": None}]}) == [
        "perturbations.0.intensity: None is not of type 'number'"
    ]
    assert _problems({**base, "perturbations": [{"kind": "typos", "seed": "7"}]}) == [
        "perturbations.0.seed: '7' is not of type 'integer'"
    ]
    assert _problems({**base, "perturbations": [{"kind": "typos", "bogus": 1}]}) == [
        "perturbations.0: unknown field 'bogus'; valid fields: kind, intensity, seed, name, "
        "context (see 'evalrunner schema event')"
    ]
