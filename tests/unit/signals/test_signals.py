"""A monitor run's series (which runs, which suite label, which values), putting them into
CloudWatch (moto reads them back), the worst interactions (order, masking, secrets, cut) and
the settings the stack passes."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import boto3
import pytest
from moto import mock_aws

from evalrunner import redaction
from evalrunner.errors import ConfigError
from evalrunner.evaluators.base import MetricResult
from evalrunner.reports.model import CaseRow
from evalrunner.reports.summary import MetricSummary
from evalrunner.signals.cloudwatch import put_series
from evalrunner.signals.series import (
    Datapoint,
    is_monitor_run,
    monitor_suite_label,
    run_series,
    suite_label,
)
from evalrunner.signals.settings import SignalSettings
from evalrunner.signals.worst import worst_lines, worst_rows
from tests.support.summaries import metric, run_summary

MONITOR_KEY = "test-suites/_monitor/prod-hr/260101-000000-abcd.json"


def monitor_summary(**fields):
    base = {
        "target": "prod-hr",
        "target_kind": "logged",
        "suite": MONITOR_KEY,
        "metrics": [
            metric("Faithfulness", average=0.75, pass_rate=0.5, count=4),
            metric("Answer Relevancy", average=None, pass_rate=None, skipped=4),
            metric("Claims", primary=False, average=0.2, pass_rate=0.1),
        ],
    }
    return run_summary(**{**base, **fields})


def test_a_monitor_run_is_one_series_per_monitor_whatever_its_suite_file():
    summary = monitor_summary()
    assert is_monitor_run(summary)
    assert suite_label(summary) == "_monitor/prod-hr" == monitor_suite_label("prod-hr")
    # the same folder with another target kind is somebody's suite, not the monitor's
    assert not is_monitor_run(monitor_summary(target_kind="lambdaArn"))
    assert suite_label(run_summary(suite="test-suites/hr/cases.xlsx")) == "hr/cases.xlsx"


def test_the_series_are_the_scored_primary_metrics():
    points = run_series(monitor_summary())
    assert [(p.name, p.metric, p.value) for p in points] == [
        ("Average", "Faithfulness", 0.75),
        ("PassRate", "Faithfulness", 0.5),
    ]
    assert {(p.target, p.suite) for p in points} == {("prod-hr", "_monitor/prod-hr")}
    assert points[0].timestamp == datetime(2026, 11, 22, 10, 1, tzinfo=UTC)
    assert run_series(monitor_summary(partial=True)) == []  # a stopped run is no point


def test_put_series_sends_every_point_in_calls_cloudwatch_accepts():
    when = datetime.now(UTC).replace(microsecond=0) - timedelta(minutes=5)
    points = [
        Datapoint(
            name="PassRate", target="t", suite="s", metric=f"m{i}", value=i / 1200, timestamp=when
        )
        for i in range(1200)
    ]
    with mock_aws():
        cloudwatch = boto3.client("cloudwatch", region_name="us-east-1")
        assert put_series(cloudwatch, "ns", points) == 1200
        listed = cloudwatch.get_paginator("list_metrics").paginate(Namespace="ns")
        metrics = [m for page in listed for m in page["Metrics"]]
        assert len(metrics) == 1200
        stats = cloudwatch.get_metric_statistics(
            Namespace="ns",
            MetricName="PassRate",
            Dimensions=[
                {"Name": "Target", "Value": "t"},
                {"Name": "Suite", "Value": "s"},
                {"Name": "Metric", "Value": "m600"},
            ],
            StartTime=when - timedelta(hours=1),
            EndTime=when + timedelta(hours=1),
            Period=3600,
            Statistics=["Average"],
        )
        assert [p["Average"] for p in stats["Datapoints"]] == [0.5]


def result(name: str, score: float, success: bool) -> MetricResult:
    return MetricResult(
        evaluator=name,
        metric=name,
        status="scored",
        score=score,
        success=success,
        threshold=0.5,
        reason="",
    )


def row(
    case_id: str, *results: MetricResult, answer: str = "an answer", status: str = "ok"
) -> CaseRow:
    return CaseRow.model_validate(
        {
            "case_id": case_id,
            "iteration": 1,
            "question": f"question of {case_id}",
            "answer": answer,
            "status": status,
            "results": list(results),
        }
    )


METRICS = [
    MetricSummary.model_validate(metric("F")),
    MetricSummary.model_validate(metric("R")),
    MetricSummary.model_validate(metric("Tox", higher_is_better=False)),
    MetricSummary.model_validate(metric("Aux", primary=False)),
]


def test_the_worst_failed_the_most_metrics_then_furthest():
    rows = [
        row("ok", result("F", 0.9, True)),
        row("one-small", result("F", 0.45, False)),
        row("one-big", result("F", 0.05, False), result("R", 0.9, True)),
        row("two", result("F", 0.4, False), result("Tox", 0.6, False)),
        row("aux-only", result("Aux", 0.0, False)),  # not a primary metric
        row("error", result("F", 0.0, False), status="target_error"),
    ]
    worst = worst_rows(rows, METRICS, 3)
    assert [w.case_id for w in worst] == ["two", "one-big", "one-small"]
    assert worst[0].margin == pytest.approx(-0.1)
    assert [f.text() for f in worst[0].failed] == [
        "F 0.40 (needs >= 0.5)",
        "Tox 0.60 (needs <= 0.5)",
    ]
    assert worst_rows(rows, METRICS, 1)[0].case_id == "two"
    assert worst_rows([rows[0]], METRICS, 5) == []
    assert worst_lines([], 300) == []


def test_the_listed_text_is_masked_redacted_and_cut():
    redaction.register("sk-live-0123456789abcdef")
    try:
        answer = "Token sk-live-0123456789abcdef sent to a@b.com. " + "More text. " * 50
        (worst,) = worst_rows(
            [row("c", result("F", 0.1, False), answer=answer)], METRICS, 5, text_chars=60
        )
    finally:
        redaction.forget_all()
    assert "sk-live" not in worst.answer and "a@b.com" not in worst.answer
    assert worst.answer.startswith("Token *** sent to <EMAIL_1>.")
    assert len(worst.answer) == 60 and worst.answer.endswith("…")
    lines = worst_lines([worst], 60)
    assert lines[0] == "Worst interactions (PII masked, texts cut to 60 characters):"
    assert lines[1] == "1. c: F 0.10 (needs >= 0.5)"


def test_settings_from_the_environment():
    assert SignalSettings.from_env({}) == SignalSettings(namespace=None, worst=5, text_chars=300)
    env = {
        "EVALRUNNER_SIGNALS_NAMESPACE": "ns",
        "EVALRUNNER_SIGNALS_WORST": "3",
        "EVALRUNNER_SIGNALS_TEXT_CHARS": "100",
    }
    assert SignalSettings.from_env(env) == SignalSettings(namespace="ns", worst=3, text_chars=100)
    with pytest.raises(ConfigError, match="EVALRUNNER_SIGNALS_WORST"):
        SignalSettings.from_env({"EVALRUNNER_SIGNALS_WORST": "many"})
    with pytest.raises(ConfigError, match="redeploy"):
        SignalSettings.from_env({"EVALRUNNER_SIGNALS_WORST": "500"})
