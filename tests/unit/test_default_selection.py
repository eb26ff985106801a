"""With no metric named, the run keeps the cheap evaluators that apply to the suite."""

import boto3
from moto import mock_aws

from evalrunner.pipeline.prepare import applicable_defaults, prepare_run
from evalrunner.storage import RunStore
from evalrunner.suite import read_suite


def test_defaults_drop_evaluators_with_nothing_to_score():
    with_expected = read_suite(b"question,expected_answer\nQ?,A\n", "s.csv")
    without = read_suite(b"question\nQ?\n", "s.csv")
    names = ["Rouge Metric", "Exact match"]
    assert applicable_defaults(with_expected, names) == names
    # nothing applies: keep the selection rather than run nothing (every case is skipped
    # with a reason that says to fill expected_answer)
    assert applicable_defaults(without, names) == names


def test_explicit_metrics_are_kept_as_named():
    with mock_aws():
        s3 = boto3.client("s3", region_name="us-east-1")
        s3.create_bucket(Bucket="b-sel")
        s3.put_object(Bucket="b-sel", Key="test-suites/s.csv", Body=b"question\nQ?\n")
        store = RunStore("b-sel", client=s3)
        out = prepare_run(
            {
                "key": "test-suites/s.csv",
                "iterations": 1,
                "target": {"lambdaArn": "f"},
                "metrics": ["BLEU"],
                "run_id": "r",
            },
            store,
        )
        assert store.get_json(store.run_key(out.run_id))["metrics"] == ["BLEU"]
