"""The aggregate handler's CloudWatch metrics: EMF lines inside Lambda, nothing locally."""

import json

from lambdas._common import emit_run_metrics
from tests.support.summaries import metric, run_summary

SUMMARY = run_summary(
    metrics=[
        metric("ROUGE-L", pass_rate=0.5, average=0.61),
        metric("ROUGE-1", primary=False, pass_rate=0.9, average=0.8),
        metric("Exact match", pass_rate=None, average=None),
    ],
    regression={
        "verdict": "regression",
        "baseline_run_id": "r0",
        "baseline_started_at": "2026-11-21T10:00:00+00:00",
    },
)


def test_emf_lines_inside_lambda(monkeypatch, capsys):
    monkeypatch.setenv("AWS_LAMBDA_FUNCTION_NAME", "evalrunner-aggregate")
    assert emit_run_metrics(SUMMARY) == 3
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line]
    by_name = {
        (next(iter(m["CloudWatchMetrics"][0]["Metrics"]))["Name"], line.get("Metric")): line
        for line in lines
        for m in [line["_aws"]]
    }
    pass_rate = by_name[("PassRate", "ROUGE-L")]
    assert pass_rate["PassRate"] == [50.0] and pass_rate["Target"] == "prod-rag"
    assert pass_rate["_aws"]["CloudWatchMetrics"][0]["Namespace"] == "evalrunner"
    assert by_name[("AverageScore", "ROUGE-L")]["AverageScore"] == [0.61]
    assert by_name[("Regression", None)]["Regression"] == [1.0]
    assert ("PassRate", "ROUGE-1") not in by_name  # primary metrics only


def test_nothing_printed_outside_lambda(monkeypatch, capsys):
    monkeypatch.delenv("AWS_LAMBDA_FUNCTION_NAME", raising=False)
    assert emit_run_metrics(SUMMARY) == 0
    assert capsys.readouterr().out == ""
