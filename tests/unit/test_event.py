"""The event contract: good events parse, every kind of bad event gets one clear message."""

import json

import pytest

from evalrunner.errors import EventError
from evalrunner.event import event_schema, parse_event

AGENT = {"agentId": "ABCDEFGHIJ", "agentAliasId": "TSTALIASID"}


def ev(**overrides):
    base = {"key": "test-suites/hr.xlsx", "iterations": 2, "target": dict(AGENT)}
    base.update(overrides)
    return base


def problems(raw) -> list[str]:
    with pytest.raises(EventError) as info:
        parse_event(raw)
    return info.value.problems


def test_legacy_event_with_metric_parses():
    parsed = parse_event(ev(target={**AGENT, "metric": "Rouge Metric"}))
    assert parsed.iterations == 2
    assert parsed.metrics == ["Rouge Metric"]
    assert parsed.target_kind == "agentId"


def test_defaults_select_every_cpu_evaluator():
    from evalrunner.evaluators import Requirement, available

    parsed = parse_event(ev())
    cheap = [
        n for n, c in available().items() if c.requires is Requirement.NOTHING and c.in_defaults
    ]
    assert parsed.metrics == cheap and not parsed.metrics_explicit
    assert "Classification" not in parsed.metrics  # only when named
    assert {"Rouge Metric", "BLEU", "Token F1", "Exact match"} <= set(parsed.metrics)
    assert parsed.max_concurrency == 10


@pytest.mark.parametrize(
    "target,kind",
    [
        ({"lambdaArn": "arn:aws:lambda:eu-west-1:123456789012:function:my-fn"}, "lambdaArn"),
        (
            {"stepFunctionArn": "arn:aws:states:us-east-1:123456789012:stateMachine:rag"},
            "stepFunctionArn",
        ),
        ({"url": "http://127.0.0.1:8080/ask", "answer_path": "data.text"}, "url"),
        ({"openai": {"base_url": "http://localhost:11434/v1", "model": "llama3"}}, "openai"),
        (
            {"knowledgeBaseId": "KB12345678", "modelArn": "arn:aws:bedrock:::model"},
            "knowledgeBaseId",
        ),
    ],
)
def test_each_target_kind(target, kind):
    assert parse_event(ev(target=target)).target_kind == kind


def test_metric_list_and_metrics_field_are_merged_without_duplicates():
    parsed = parse_event(ev(target={**AGENT, "metric": ["BLEU", "rouge metric"]}, metrics=["BLEU"]))
    assert parsed.metrics == ["BLEU", "Rouge Metric"]


@pytest.mark.parametrize("bad", [0, -1, "2", 1.5, None])
def test_bad_iterations(bad):
    (msg,) = problems(ev(iterations=bad))
    assert msg.startswith("iterations:")
    assert "whole number" in msg


def test_missing_iterations_has_no_default():
    raw = ev()
    del raw["iterations"]
    (msg,) = problems(raw)
    assert "iterations: required field is missing" in msg


def test_two_target_kinds_refused():
    (msg,) = problems(ev(target={**AGENT, "lambdaArn": "fn"}))
    assert "exactly one target kind" in msg and "agentId and lambdaArn" in msg


def test_no_target_kind_refused():
    (msg,) = problems(ev(target={"metric": "BLEU"}))
    assert "no target kind" in msg


def test_unknown_target_field_names_the_field_and_the_valid_ones():
    (msg,) = problems(ev(target={"lambdaArn": "fn", "answr_path": "x"}))
    assert "'answr_path'" in msg and "answer_path" in msg


def test_unknown_metric_lists_valid_names_and_suggests():
    (msg,) = problems(ev(metrics=["Rouge Metrc"]))
    assert "unknown metric 'Rouge Metrc'" in msg
    assert "Did you mean 'Rouge Metric'" in msg
    valid = msg.split("Valid names: ")[1]
    assert {"Rouge Metric", "BLEU", "Token F1"} <= set(valid.rstrip(".").split(", "))


def test_the_names_existing_events_use_for_model_metrics_are_accepted():
    assert "BERT Score" in parse_event(ev(target={**AGENT, "metric": "BERT Score"})).metrics
    event = parse_event(ev(metrics=["BERT Score", "Toxicity", "Groundedness"]))
    assert event.metrics == ["BERT Score", "Toxicity", "Groundedness"]


@pytest.mark.parametrize(
    "key",
    [
        "../secrets.xlsx",
        "test-suites/../../x.xlsx",
        "/etc/passwd.csv",
        "other/x.xlsx",
        "test-suites//x.xlsx",
        "test-suites\\x.xlsx",
        "test-suites/x.txt",
    ],
)
def test_suite_key_cannot_escape_prefix(key):
    (msg,) = problems(ev(key=key))
    assert msg.startswith("key:")


def test_unknown_top_level_field():
    (msg,) = problems(ev(iteration=3))
    assert "unknown field 'iteration'" in msg


def test_threshold_for_unselected_metric_refused():
    (msg,) = problems(ev(metrics=["BLEU"], thresholds={"ROUGE-L": 0.3}))
    assert "thresholds.ROUGE-L" in msg and "BLEU-1" in msg


def test_all_problems_reported_together():
    found = problems({"key": "../x.xlsx", "iterations": 0, "target": {**AGENT, "url": "http://x"}})
    assert len(found) == 3


def test_event_is_json_text_or_object():
    assert parse_event(json.dumps(ev())).key == "test-suites/hr.xlsx"
    with pytest.raises(EventError, match="not valid JSON"):
        parse_event("{nope")
    with pytest.raises(EventError, match="must be a JSON object"):
        parse_event([1])


def test_printed_schema_lists_this_releases_metrics():
    schema = event_schema()
    assert "Rouge Metric" in schema["properties"]["metrics"]["items"]["enum"]
    assert schema["required"] == ["key", "iterations", "target"]
