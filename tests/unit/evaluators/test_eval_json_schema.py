"""JSON schema: parsing (fences, strictness), validation with paths, schema sources, checks."""

import json
import time

import pytest
from pydantic import ValidationError

from evalrunner.evaluators import Sample, resolve
from evalrunner.evaluators.json_schema import JsonSchema, strip_fence
from tests.support.scaling import BACKSTOP_SECONDS

ORDER = {
    "type": "object",
    "required": ["id", "items"],
    "properties": {
        "id": {"type": "string"},
        "items": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["price"],
                "properties": {"price": {"type": "number", "minimum": 0}},
            },
        },
        "email": {"type": "string", "format": "email"},
    },
}


def run(answer, schema=None, *, case_schema=None, **options):
    if schema is not None:
        options["schema"] = schema
    metadata = {} if case_schema is None else {"json_schema": case_schema}
    s = Sample(question="q", answer=answer, metadata=metadata)
    return {r.metric: r for r in resolve("JSON schema")({}, options).evaluate(s)}


def test_valid_answer_matches():
    r = run('{"id": "A1", "items": [{"price": 3.5}]}', ORDER)
    assert r["Valid JSON"].score == 1.0 and r["Valid JSON"].success
    assert r["Schema valid"].score == 1.0 and r["Schema valid"].success
    assert r["Valid JSON"].reason == "parses as JSON (an object with 2 keys)"
    assert r["Schema valid"].reason == "matches the run's schema"


@pytest.mark.parametrize(
    "answer",
    [
        '```json\n{"id": "A1", "items": []}\n```',
        '  ```JSON\n{"id": "A1", "items": []}```\n',
        '```\n{"id": "A1", "items": []}\n```',
    ],
)
def test_a_surrounding_fence_is_stripped_and_said(answer):
    r = run(answer, ORDER)
    assert r["Valid JSON"].score == 1.0 and r["Schema valid"].score == 1.0
    assert "a ```json fence was stripped first" in r["Valid JSON"].reason


def test_strip_fence_leaves_other_text_alone():
    assert strip_fence('{"a": 1}') == ('{"a": 1}', False)
    assert strip_fence("```python\nx = 1\n```") == ("```python\nx = 1\n```", False)
    assert strip_fence("```") == ("```", False)
    assert strip_fence("``````") == ("``````", False)


@pytest.mark.parametrize(
    ("answer", "fragment"),
    [
        ('Sure! {"id": "A1"}', "Expecting value at line 1 column 1"),
        ('{"id": "A1",}', "line 1 column 13"),
        ('{"id": "A1"}\nHope this helps!', "Extra data at line 2 column 1"),
        ('{"price": NaN}', "NaN is not allowed"),
        ("[" * 100_000 + "]" * 100_000, "nested too deeply"),
        ("", "the answer is empty"),
        ("```json\n\n```", "the answer is empty"),
    ],
)
def test_invalid_json(answer, fragment):
    r = run(answer, {})
    assert r["Valid JSON"].score == 0.0 and r["Valid JSON"].success is False
    assert fragment in r["Valid JSON"].reason
    assert r["Schema valid"].score == 0.0


def test_schema_errors_list_up_to_three_with_json_paths():
    answer = {"items": [{"price": -1}, {"price": "x"}, {}], "email": "nope"}
    r = run(json.dumps(answer), ORDER)["Schema valid"]
    assert r.score == 0.0 and r.success is False
    assert r.reason.startswith("5 schema errors against the run's schema: ")
    assert "$: 'id' is a required property" in r.reason
    assert "$.email: 'nope' is not a 'email'" in r.reason
    assert "$.items[2]: 'price' is a required property" in r.reason  # shallowest first
    assert "$.items[0].price" not in r.reason  # only three are listed
    r = run(json.dumps({"id": "A", "items": [{"price": -1}] * 11 + [{"price": "x"}]}), ORDER)
    assert r["Schema valid"].reason == (
        "12 schema errors against the run's schema: "
        + "; ".join(f"$.items[{i}].price: -1 is less than the minimum of 0" for i in range(3))
    )


def test_empty_schema_means_must_parse():
    r = run("[1, 2]", {})
    assert r["Schema valid"].score == 1.0
    assert "accepts any JSON" in r["Schema valid"].reason
    assert run('"just a string"', True)["Schema valid"].score == 1.0


def test_per_case_schema_wins_over_the_run_schema():
    case = json.dumps({"type": "array"})
    r = run("[1]", ORDER, case_schema=case)["Schema valid"]
    assert r.score == 1.0 and r.reason == "matches the case's json_schema"
    r = run('{"id": "A1", "items": []}', ORDER, case_schema={"type": "array"})["Schema valid"]
    assert r.score == 0.0 and "against the case's json_schema: $: " in r.reason
    r = run('{"id": "A1", "items": []}', ORDER, case_schema="  ")["Schema valid"]
    assert r.score == 1.0  # a blank cell falls back to the run's schema


def test_no_schema_anywhere_skips():
    r = run('{"a": 1}')
    assert all(x.status == "skipped" for x in r.values())
    assert "no JSON schema" in r["Schema valid"].reason


def test_dollar_schema_picks_the_draft():
    # `dependencies` is a Draft 7 keyword; Draft 2020-12 (the default) ignores it.
    deps = {"dependencies": {"a": ["b"]}}
    assert run('{"a": 1}', deps)["Schema valid"].score == 1.0
    draft7 = {"$schema": "http://json-schema.org/draft-07/schema#", **deps}
    r = run('{"a": 1}', draft7)["Schema valid"]
    assert r.score == 0.0 and "'b' is a dependency of 'a'" in r.reason


def test_formats_can_be_turned_off():
    answer = '{"id": "A1", "items": [], "email": "nope"}'
    assert run(answer, ORDER)["Schema valid"].score == 0.0
    assert run(answer, ORDER, check_formats=False)["Schema valid"].score == 1.0


def test_backtracking_schema_pattern_cannot_hang():
    schema = {"type": "string", "pattern": "^(a+)+$"}
    start = time.monotonic()
    r = run(json.dumps("a" * 5000 + "b"), schema)["Schema valid"]
    # Without the timeout this match never ends; a generous bound cannot flake under load.
    assert time.monotonic() - start < BACKSTOP_SECONDS
    assert r.score == 0.0 and "timed out" in r.reason
    assert run('"aaa"', schema)["Schema valid"].score == 1.0
    keys = {"type": "object", "patternProperties": {"^x": {"type": "integer"}}}
    assert run('{"xa": 1, "b": "s"}', keys)["Schema valid"].score == 1.0
    assert "$.xa" in run('{"xa": "s"}', keys)["Schema valid"].reason


def case(schema):
    return Sample(question="q", metadata={"json_schema": schema})


def test_check_case_names_bad_per_case_schemas():
    assert JsonSchema.check_case(case('{"type": ')) == [
        "json_schema is not valid JSON: Expecting value at line 1 column 10"
    ]
    (bad,) = JsonSchema.check_case(case({"properties": {"a": {"minimum": "x"}}}))
    assert bad.startswith("json_schema is not a valid JSON Schema: 'x' is not of type")
    assert bad.endswith("at $.properties.a.minimum")
    assert JsonSchema.check_case(case("[1]")) == [
        "json_schema must be a JSON object (or true/false), not an array of 1 item"
    ]
    assert JsonSchema.check_case(case({"$schema": "http://example.com/x"})) == [
        "json_schema is not a valid JSON Schema: unknown $schema 'http://example.com/x'"
    ]
    assert JsonSchema.check_case(case(json.dumps(ORDER))) == []
    assert JsonSchema.check_case(case(None)) == []
    assert JsonSchema.check_case(Sample(question="q")) == []


def test_a_bad_per_case_schema_at_score_time_is_an_error_not_a_fail():
    r = run("{}", case_schema='{"type": "strin"}')
    assert all(x.status == "error" for x in r.values())
    assert "json_schema is not a valid JSON Schema" in r["Schema valid"].reason


def test_a_bad_run_schema_is_refused_with_the_options():
    with pytest.raises(ValidationError, match="the schema option is not a valid JSON Schema"):
        JsonSchema({}, {"schema": {"type": 5}})
    with pytest.raises(ValidationError):
        JsonSchema({}, {"schema": [1]})
