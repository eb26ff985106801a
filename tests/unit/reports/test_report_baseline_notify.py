"""Baseline lookup in the bucket, and the SNS summary."""

from __future__ import annotations

import json

import boto3
import pytest
from moto import mock_aws

from evalrunner.errors import StorageError
from evalrunner.notify import message, publish_summary, subject
from evalrunner.pipeline.baseline import find_baseline
from evalrunner.reports.model import ReportData
from evalrunner.reports.summary import RunSummary
from evalrunner.reports.verdict import VerdictPolicy, decide
from evalrunner.reports.writers.publish import SetWriter
from evalrunner.storage import RunStore
from tests.support.summaries import metric, report_keys, run_summary


def report(run_id: str, started_at: str, suite: str = "test-suites/s.csv") -> ReportData:
    return ReportData(
        run_id=run_id,
        target="t",
        target_kind="lambdaArn",
        suite=suite,
        started_at=started_at,
        finished_at=started_at,
        iterations=1,
        config={},
        metrics=[],
        stats=[],
        rows=[],
    )


@pytest.fixture
def store():
    with mock_aws():
        s3 = boto3.client("s3", region_name="us-east-1")
        s3.create_bucket(Bucket="b-base")
        yield RunStore("b-base", client=s3)


def put_run(store: RunStore, data: ReportData, stamp: str, *, complete: bool = True) -> None:
    """A report set as Aggregate writes it: files, then (when complete) the manifest."""
    prefix = f"test-reports/t/{stamp}-"
    writer = SetWriter(store, data.run_id, prefix)
    writer.put_json(f"{prefix}report.json", data.model_dump(mode="json"))
    summary = run_summary(
        run_id=data.run_id,
        target=data.target,
        suite=data.suite,
        started_at=data.started_at,
        reports=report_keys(prefix).model_dump(),
    )
    writer.put_json(f"{prefix}summary.json", summary.model_dump(mode="json"))
    if complete:
        writer.publish()


def latest(store: RunStore) -> str | None:
    found = find_baseline(
        store,
        target="t",
        suite="test-suites/s.csv",
        run_id="now",
        started_at="2026-11-22T10:00:00+00:00",
    )
    return found.run_id if found else None


def test_a_set_without_its_manifest_is_never_the_baseline(store):
    put_run(store, report("r1", "2026-11-20T10:00:00+00:00"), "261120-100000")
    put_run(store, report("cut", "2026-11-21T10:00:00+00:00"), "261121-100000", complete=False)
    assert latest(store) == "r1"
    with pytest.raises(StorageError, match=r"baseline run 'cut' has no complete report"):
        find_baseline(
            store,
            target="t",
            suite="test-suites/s.csv",
            run_id="now",
            started_at="2026-11-22T10:00:00+00:00",
            baseline_run_id="cut",
        )


def test_a_set_whose_files_differ_from_its_manifest_is_skipped(store):
    put_run(store, report("r1", "2026-11-20T10:00:00+00:00"), "261120-100000")
    put_run(store, report("r2", "2026-11-21T10:00:00+00:00"), "261121-100000")
    assert latest(store) == "r2"
    # a rewrite in progress (or a half-copied file): report.json is not the listed one
    store.put_bytes("test-reports/t/261121-100000-report.json", b'{"run_id": "r2"', "x")
    assert latest(store) == "r1"
    # and a summary that is not the listed one hides the whole set
    put_run(store, report("r3", "2026-11-21T12:00:00+00:00"), "261121-120000")
    assert latest(store) == "r3"
    store.put_json("test-reports/t/261121-120000-summary.json", {"run_id": "r3", "reports": {}})
    assert latest(store) == "r1"


def test_previous_run_of_same_suite_is_the_baseline(store):
    put_run(store, report("r1", "2026-11-20T10:00:00+00:00"), "261120-100000")
    put_run(store, report("r2", "2026-11-21T10:00:00+00:00"), "261121-100000")
    put_run(
        store,
        report("other", "2026-11-21T11:00:00+00:00", suite="test-suites/x.csv"),
        "261121-110000",
    )
    found = find_baseline(
        store,
        target="t",
        suite="test-suites/s.csv",
        run_id="now",
        started_at="2026-11-22T10:00:00+00:00",
    )
    assert found is not None and found.run_id == "r2"


def test_no_earlier_run_means_no_baseline(store):
    put_run(store, report("later", "2026-11-23T10:00:00+00:00"), "261123-100000")
    assert (
        find_baseline(
            store,
            target="t",
            suite="test-suites/s.csv",
            run_id="now",
            started_at="2026-11-22T10:00:00+00:00",
        )
        is None
    )


def test_named_baseline_and_a_missing_one(store):
    put_run(store, report("r1", "2026-11-20T10:00:00+00:00"), "261120-100000")
    put_run(store, report("r2", "2026-11-21T10:00:00+00:00"), "261121-100000")
    found = find_baseline(
        store,
        target="t",
        suite="test-suites/s.csv",
        run_id="now",
        started_at="2026-11-22T10:00:00+00:00",
        baseline_run_id="r1",
    )
    assert found is not None and found.run_id == "r1"
    with pytest.raises(StorageError, match=r"baseline run 'nope'.*r1, r2"):
        find_baseline(
            store,
            target="t",
            suite="test-suites/s.csv",
            run_id="now",
            started_at="2026-11-22T10:00:00+00:00",
            baseline_run_id="nope",
        )


SUMMARY = run_summary(
    run_id="r9",
    regression={
        "verdict": "regression",
        "baseline_run_id": "r8",
        "baseline_started_at": "2026-11-21T10:00:00+00:00",
        "reasons": ["ROUGE-L fell by 0.21"],
    },
    problems=[
        {
            "severity": "high",
            "type": "regression",
            "description": "3 cases that passed now fail",
            "suggested_action": "see report.html",
            "affected_count": 3,
        }
    ],
    metrics=[metric("ROUGE-L", average=0.41, pass_rate=0.5, count=4)],
)
SUMMARY.verdict = decide(
    items=SUMMARY.items,
    answered=SUMMARY.answered_runs(),
    stats=SUMMARY.metrics,
    gates=[],
    regressed=True,
    regression_reasons=["ROUGE-L fell by 0.21"],
    baseline_run_id="r8",
    policy=VerdictPolicy(fail_on="regressions"),
)


def test_subject_and_message_say_what_got_worse():
    assert subject(SUMMARY) == "evalrunner REGRESSED: prod-rag on test-suites/hr.xlsx"
    text = message(SUMMARY)
    assert "ROUGE-L fell by 0.21" in text and "[high] 3 cases that passed now fail" in text
    assert "s3://bkt/test-reports/prod-rag/261122-100000-report.html" in text
    assert "ROUGE-L: average 0.410, pass rate 50%" in text
    # the last line: the run and its report keys, as JSON, in the set's order
    tail = json.loads(text.splitlines()[-1])
    assert tail["run_id"] == "r9" and list(tail["reports"])[-1] == "manifest"

    def judged(policy: VerdictPolicy, regressed: bool) -> RunSummary:
        verdict = decide(
            items=2,
            answered=2,
            stats=SUMMARY.metrics,
            gates=[],
            regressed=regressed,
            policy=policy,
        )
        update: dict[str, object] = {"verdict": verdict}
        if not regressed:
            update["regression"] = None
        return SUMMARY.model_copy(update=update)

    # the subject is the run's verdict, whatever else the summary holds
    assert subject(judged(VerdictPolicy(fail_on="regressions"), False)).startswith(
        "evalrunner PASSED:"
    )
    assert subject(judged(VerdictPolicy(), False)).startswith("evalrunner FAILED:")
    # a regression the policy does not fail on is still named to the target's owners
    assert subject(judged(VerdictPolicy(fail_on="errors"), True)).startswith(
        "evalrunner PASSED, regressed:"
    )


def test_publish_reaches_the_topic():
    with mock_aws():
        sns = boto3.client("sns", region_name="us-east-1")
        sqs = boto3.client("sqs", region_name="us-east-1")
        topic = sns.create_topic(Name="runs")["TopicArn"]
        queue = sqs.create_queue(QueueName="q")["QueueUrl"]
        queue_arn = sqs.get_queue_attributes(QueueUrl=queue, AttributeNames=["QueueArn"])[
            "Attributes"
        ]["QueueArn"]
        sns.subscribe(TopicArn=topic, Protocol="sqs", Endpoint=queue_arn)
        publish_summary(topic, SUMMARY, client=sns)
        (msg,) = sqs.receive_message(QueueUrl=queue)["Messages"]
        body = json.loads(msg["Body"])
        assert body["Subject"].startswith("evalrunner REGRESSED")
        assert "ROUGE-L fell by 0.21" in body["Message"]
