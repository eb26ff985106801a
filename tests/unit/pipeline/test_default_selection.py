"""Which evaluators a run gets, and what Prepare refuses before any target is called."""

from __future__ import annotations

import boto3
import pytest
from moto import mock_aws

from evalrunner.errors import EventError, SuiteError
from evalrunner.event import parse_event, read_event
from evalrunner.pipeline.prepare import applicable_defaults, prepare_run
from evalrunner.storage import RunStore
from evalrunner.suite import read_suite

PLAIN = b"question,expected_answer\nQ?,A\n"
RICH = (
    b"question,expected_answer,condition,categories,expected_documents,expected_intent,json_schema\n"
    b'Q?,A,"""25 days""",jailbreak,leave.md,leave,"{""type"": ""object""}"\n'
)


def defaults_for(suite_bytes: bytes, **event) -> list[str]:
    parsed = parse_event(
        {"key": "test-suites/s.csv", "iterations": 1, "target": {"lambdaArn": "f"}, **event}
    )
    suite = read_suite(suite_bytes, "s.csv")
    return applicable_defaults(suite, parsed.metrics, parsed.evaluator_options)


def test_plain_suite_leaves_out_evaluators_with_nothing_to_score():
    names = defaults_for(PLAIN)
    assert {"Rouge Metric", "PII leakage", "Looping detection", "Language mismatch"} <= set(names)
    for absent in (
        "Text matching",
        "JSON schema",
        "Refusal",
        "Intent classification",
        "Tool choice",
        "Retrieval rank",
        "Chunk match",
    ):
        assert absent not in names


def test_rich_suite_gets_the_evaluators_its_columns_ask_for():
    names = set(defaults_for(RICH))
    assert {
        "Text matching",
        "JSON schema",
        "Refusal",
        "Intent classification",
        "Retrieval rank",
    } <= names
    assert "Tool choice" not in names and "Chunk match" not in names


def test_configuring_an_evaluator_keeps_it():
    names = defaults_for(PLAIN, evaluator_options={"JSON schema": {"schema": {"type": "array"}}})
    assert "JSON schema" in names


def test_evaluator_options_are_validated_at_parse_time():
    with pytest.raises(EventError) as info:
        parse_event(
            {
                "key": "test-suites/s.csv",
                "iterations": 1,
                "target": {"lambdaArn": "f"},
                "metrics": ["Retrieval rank"],
                "evaluator_options": {"Retrieval rank": {"k": "three"}, "Refusal": {}},
            }
        )
    text = str(info.value)
    assert "evaluator_options.Retrieval rank.k" in text
    assert "evaluator_options.Refusal: not an evaluator of this run" in text


@pytest.fixture
def store():
    with mock_aws():
        s3 = boto3.client("s3", region_name="us-east-1")
        s3.create_bucket(Bucket="b-sel")
        yield RunStore("b-sel", client=s3)


def test_explicit_metrics_are_kept_as_named(store):
    store.put_bytes("test-suites/s.csv", b"question\nQ?\n", "text/csv")
    out = prepare_run(
        read_event(
            {
                "key": "test-suites/s.csv",
                "iterations": 1,
                "target": {"lambdaArn": "f"},
                "metrics": ["BLEU"],
                "run_id": "r",
            }
        ),
        store,
    )
    assert store.get_json(store.run_key(out.run_id))["metrics"] == ["BLEU"]


def test_malformed_condition_stops_the_run_naming_row_and_position(store):
    suite = b'id,question,condition\nok,Q1?,"""fine"""\nbad,Q2?,"(""a"" AND ""b"""\n'
    store.put_bytes("test-suites/c.csv", suite, "text/csv")
    with pytest.raises(SuiteError) as info:
        prepare_run(
            read_event(
                {
                    "key": "test-suites/c.csv",
                    "iterations": 1,
                    "target": {"lambdaArn": "f"},
                    "metrics": ["Text matching"],
                }
            ),
            store,
        )
    message = str(info.value)
    assert "row 3 (id bad), Text matching: condition:" in message
    assert "position" in message
    assert store.list_keys("runs/") == []  # nothing written, no target called


def test_a_judge_without_metrics_adds_the_five_rag_judge_metrics():
    judge = {"openai": {"base_url": "http://127.0.0.1:9/v1", "model": "m"}}
    with_judge = parse_event(
        {"key": "test-suites/s.csv", "iterations": 1, "target": {"lambdaArn": "f"}, "judge": judge}
    ).metrics
    without = parse_event(
        {"key": "test-suites/s.csv", "iterations": 1, "target": {"lambdaArn": "f"}}
    ).metrics
    rag = [
        "Faithfulness",
        "Answer Relevancy",
        "Contextual Precision",
        "Contextual Recall",
        "Contextual Relevancy",
    ]
    assert with_judge[-5:] == rag and not set(rag) & set(without)
    # and a suite without retrieval ground truth still keeps those that apply
    names = applicable_defaults(read_suite(PLAIN, "s.csv"), with_judge)
    assert "Faithfulness" in names and "Contextual Recall" in names


def test_every_bad_case_is_listed_evaluator_by_evaluator_in_row_order(store):
    """Prepare asks each checking evaluator about every case (one sample per case, shared):
    the problems come evaluator by evaluator, rows in order, and an evaluator without a
    check of its own (ROUGE) refuses nothing."""
    suite = (
        b"id,question,condition,json_schema\n"
        b'a,Q1?,"(""x""","{""type"": "\n'
        b'b,Q2?,"""fine""","{""type"": ""object""}"\n'
        b'c,Q3?,"""y"" AND (","{""type"": "\n'
    )
    store.put_bytes("test-suites/c.csv", suite, "text/csv")
    event = {"key": "test-suites/c.csv", "iterations": 1, "target": {"lambdaArn": "f"}}
    with pytest.raises(SuiteError) as info:
        prepare_run(
            read_event({**event, "metrics": ["JSON schema", "Rouge Metric", "Text matching"]}),
            store,
        )
    lines = [line.strip() for line in str(info.value).splitlines() if line.strip().startswith("-")]
    assert [line.split(":")[0] for line in lines] == [
        "- row 2 (id a), JSON schema",
        "- row 4 (id c), JSON schema",
        "- row 2 (id a), Text matching",
        "- row 4 (id c), Text matching",
    ]
    assert "4 case(s) cannot be evaluated" in str(info.value)
    out = prepare_run(read_event({**event, "metrics": ["Rouge Metric"], "run_id": "r"}), store)
    assert out.item_count == 3
