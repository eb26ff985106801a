"""The production monitor in the synthesised template (cdk.json ``monitor``): its schedule,
function, role, Aggregate's right to put the series, the anomaly-detection alarms on the very
series Aggregate puts, and the retention of the stored copies; and the configuration's checks."""

from __future__ import annotations

import copy
import json

import pytest
from aws_cdk.assertions import Match

from evalrunner.errors import ConfigError
from evalrunner.privacy import ENV_PII
from evalrunner.signals.series import is_monitor_run, run_series
from evalrunner.signals.settings import ENV_NAMESPACE
from infra.app import cdk_json_context
from infra.config import load_config
from tests.support.summaries import metric, run_summary

from .conftest import MONITOR, as_list, dump, statements

MAIN = "Evalrunner"
WILDCARD = "EvalrunnerWildcard"


def role_statements(template: dict, role: str) -> list[dict]:
    """The identity-policy statements attached to the role ``role`` (a logical id)."""
    return [
        statement
        for r in template["Resources"].values()
        if r["Type"] == "AWS::IAM::Policy" and {"Ref": role} in r["Properties"]["Roles"]
        for statement in r["Properties"]["PolicyDocument"]["Statement"]
    ]


def monitor_function(synth) -> tuple[str, dict]:
    (found,) = [
        (k, r)
        for k, r in synth.resources(MAIN, "AWS::Lambda::Function").items()
        if r["Properties"]["Handler"] == "lambdas.monitor.handler"
    ]
    return found


def test_the_schedule_invokes_the_monitor_with_its_options(synth):
    logical_id, _ = monitor_function(synth)
    (schedule,) = [
        r
        for r in synth.resources(MAIN, "AWS::Scheduler::Schedule").values()
        if "monitor" in r["Properties"]["Description"]
    ]
    props = schedule["Properties"]
    assert props["ScheduleExpression"] == "rate(1 hour)" and props["State"] == "ENABLED"
    assert props["Target"]["Arn"] == {"Fn::GetAtt": [logical_id, "Arn"]}
    assert json.loads(props["Target"]["Input"]) == {"name": "prod-hr", **MONITOR["event"]}
    role = props["Target"]["RoleArn"]["Fn::GetAtt"][0]
    invoke = role_statements(synth.templates[MAIN], role)
    assert [(s["Action"], s["Resource"]) for s in invoke] == [
        ("lambda:InvokeFunction", {"Fn::GetAtt": [logical_id, "Arn"]})
    ]


def test_the_monitor_function_settings(synth):
    _, fn = monitor_function(synth)
    props = fn["Properties"]
    env = props["Environment"]["Variables"]
    assert env["EVALRUNNER_MONITOR_SOURCE"] == MONITOR["source"]
    assert json.loads(env[ENV_PII]) == {"phone_regions": ["US", "GB"]}
    assert "EVALRUNNER_STATE_MACHINE_ARN" in env and "EVALRUNNER_BUCKET" in env
    assert props["ReservedConcurrentExecutions"] == 1  # runs never overlap
    assert props["Timeout"] == 900 and props["MemorySize"] == 3008


def test_the_monitor_role_reads_the_source_keeps_its_watermark_and_starts_runs(synth):
    template = synth.templates[MAIN]
    fn_role = monitor_function(synth)[1]["Properties"]["Role"]["Fn::GetAtt"][0]
    found = role_statements(template, fn_role)
    text = dump(found)
    by_sid = {s.get("Sid"): s for s in found}
    assert as_list(by_sid["ReadLogSource"]["Action"]) == ["s3:GetObject"]
    assert "s3:::hr-assistant-logs/AWSLogs/bedrock/*" in dump(by_sid["ReadLogSource"]["Resource"])
    assert by_sid["ListLogSource"]["Condition"] == {
        "StringLike": {"s3:prefix": ["AWSLogs/bedrock/*"]}
    }
    assert by_sid["DecryptLogSource"]["Resource"] == MONITOR["source_kms_key_arn"]
    # the bodies Bedrock stores apart (cdk.json monitor.large_bodies): read only
    assert as_list(by_sid["ReadLargeBodies"]["Action"]) == ["s3:GetObject"]
    assert "s3:::hr-assistant-logs/bedrock-large/*" in dump(by_sid["ReadLargeBodies"]["Resource"])
    assert '"states:StartExecution"' in text
    # it follows the runs it started (a failed one is started again): describe only, and
    # only the test runner's executions
    assert as_list(by_sid["FollowRuns"]["Action"]) == ["states:DescribeExecution"]
    assert ":execution:Evalrunner-test-runner:*" in dump(by_sid["FollowRuns"]["Resource"])
    for prefix in ("monitor/*", "test-suites/_monitor/prod-hr/*"):
        reads = [s for s in found if "s3:GetObject" in as_list(s["Action"]) and prefix in dump(s)]
        writes = [s for s in found if "s3:PutObject" in as_list(s["Action"]) and prefix in dump(s)]
        assert reads and writes, prefix
    # nothing else of the run bucket: not the reports, not other suites
    assert "test-reports/" not in text and '"test-suites/*"' not in text


def test_aggregate_may_put_the_series_in_the_monitor_namespace_only(synth):
    template = synth.templates[MAIN]
    (aggregate,) = [
        r
        for r in synth.resources(MAIN, "AWS::Lambda::Function").values()
        if r["Properties"]["Handler"] == "lambdas.aggregate.handler"
    ]
    env = aggregate["Properties"]["Environment"]["Variables"]
    assert env[ENV_NAMESPACE] == "evalrunner/monitor"
    (put,) = [s for _, s in statements(template) if s.get("Sid") == "PutMonitorSeries"]
    assert as_list(put["Action"]) == ["cloudwatch:PutMetricData"]
    assert put["Condition"] == {"StringEquals": {"cloudwatch:namespace": "evalrunner/monitor"}}
    wildcard = synth.templates[WILDCARD]
    assert not [s for _, s in statements(wildcard) if s.get("Sid") == "PutMonitorSeries"]


def test_the_alarms_watch_the_series_aggregate_puts(synth):
    """The alarm's dimensions are the very ones a monitor run's datapoints carry."""
    summary = run_summary(
        target="prod-hr",
        target_kind="logged",
        suite="test-suites/_monitor/prod-hr/261127-010000-ab12.json",
        metrics=[metric("Faithfulness", average=0.8, pass_rate=0.75)],
    )
    assert is_monitor_run(summary)
    (point,) = [p for p in run_series(summary) if p.name == "PassRate"]
    published = {"Target": point.target, "Suite": point.suite, "Metric": point.metric}
    alarms = [
        r["Properties"]
        for r in synth.resources(MAIN, "AWS::CloudWatch::Alarm").values()
        if "ThresholdMetricId" in r["Properties"]
    ]
    assert len(alarms) == 2
    for props in alarms:
        assert props["ComparisonOperator"] == "LessThanLowerThreshold"
        assert props["TreatMissingData"] == "notBreaching"
        assert props["AlarmActions"]  # to the runs topic
        (band,) = [m for m in props["Metrics"] if m["Id"] == props["ThresholdMetricId"]]
        assert (
            band["Expression"].startswith("ANOMALY_DETECTION_BAND(") and "2.5" in band["Expression"]
        )
        (stat,) = [m for m in props["Metrics"] if "MetricStat" in m]
        watched = stat["MetricStat"]["Metric"]
        assert watched["Namespace"] == "evalrunner/monitor"
        assert watched["MetricName"] == "PassRate"
        assert stat["MetricStat"]["Period"] == 3600
        dims = {d["Name"]: d["Value"] for d in watched["Dimensions"]}
        assert dims["Target"] == published["Target"] and dims["Suite"] == published["Suite"]
    metrics = sorted(
        {
            d["Value"]
            for p in alarms
            for m in p["Metrics"]
            if "MetricStat" in m
            for d in m["MetricStat"]["Metric"]["Dimensions"]
            if d["Name"] == "Metric"
        }
    )
    assert metrics == ["Answer Relevancy", "Faithfulness"]
    assert published["Metric"] in metrics


def test_the_stored_copies_of_production_text_expire(synth):
    t = synth.template()
    for prefix in ("test-suites/_monitor/prod-hr/", "test-reports/prod-hr/"):
        t.has_resource_properties(
            "AWS::S3::Bucket",
            {
                "LifecycleConfiguration": {
                    "Rules": Match.array_with(
                        [
                            Match.object_like(
                                {
                                    "Prefix": prefix,
                                    "ExpirationInDays": 30,
                                    "NoncurrentVersionExpiration": {"NoncurrentDays": 1},
                                    "Status": "Enabled",
                                }
                            )
                        ]
                    )
                }
            },
        )
    rules = [
        rule
        for b in synth.resources(MAIN, "AWS::S3::Bucket").values()
        for rule in b["Properties"].get("LifecycleConfiguration", {}).get("Rules", [])
    ]
    assert not [r for r in rules if r.get("Prefix", "").startswith("monitor/")]  # the watermark


def test_no_monitor_without_its_configuration(synth):
    handlers = [
        r["Properties"]["Handler"]
        for r in synth.resources(WILDCARD, "AWS::Lambda::Function").values()
    ]
    assert "lambdas.monitor.handler" not in handlers
    assert "MonitorFunctionName" not in synth.templates[WILDCARD].get("Outputs", {})


def monitor_problems(**changes) -> str:
    raw = copy.deepcopy(cdk_json_context()["evalrunner"])
    raw["monitor"] = {**copy.deepcopy(MONITOR), **changes}
    with pytest.raises(ConfigError) as caught:
        load_config(raw)
    return str(caught.value)


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        (
            {"source": "hr-logs/prefix"},
            "monitor.source: Value error, 'hr-logs/prefix' is not an S3",
        ),
        ({"source": "s3://logs/*.json"}, "no wildcards"),
        ({"schedule": "at(2026-12-01T00:00:00)"}, "is not a recurring schedule"),
        ({"event": {"sample": "5%", "key": "x"}}, "unknown monitor option(s) 'key'"),
        ({"alarms": {"metrics": ["Faithfulnes"]}}, "'Faithfulnes' is not a metric"),
        ({"alarms": {"metrics": [], "period_minutes": 45}}, "1, 5, 10, 30 or a multiple of 60"),
        ({"pii": {"phone_regions": ["ZZ"]}}, "unknown phone region(s) 'ZZ'"),
        ({"name": "has space"}, "monitor.name"),
        ({"source_kms_key_arn": "alias/logs"}, "is not a KMS key ARN"),
    ],
)
def test_monitor_configuration_mistakes_fail_synth_naming_them(changes, expected):
    assert expected in monitor_problems(**changes)


def test_pii_off_and_defaults():
    raw = copy.deepcopy(cdk_json_context()["evalrunner"])
    raw["monitor"] = {"name": "m", "source": "s3://logs"}
    config = load_config(raw).monitor
    assert config is not None
    assert config.pii.env_value() == "{}" and config.source_prefix() == ""
    assert config.schedule == "rate(1 hour)" and config.retention_days == 90
    raw["monitor"]["pii"] = {"enabled": False}
    off = load_config(raw).monitor
    assert off is not None and off.pii.env_value() == "off"
    assert off.run_input() == {"name": "m", "mask_pii": False}  # the monitor's own switch
    assert as_list("x") == ["x"]


def test_the_readme_monitor_example_is_valid_configuration():
    import re
    from pathlib import Path

    readme = (Path(__file__).parents[2] / "README.md").read_text("utf-8")
    section = readme[readme.index("### Deploying the monitor") : readme.index("### Scale and cost")]
    (block,) = re.findall(r"```jsonc\n(.*?)```", section, re.S)
    raw = copy.deepcopy(cdk_json_context()["evalrunner"])
    raw.update(json.loads(block))
    config = load_config(raw).monitor
    assert config is not None and config.alarms.metrics == ["Faithfulness", "Answer Relevancy"]


def test_the_dashboard_charts_the_monitor_series(synth):
    (dashboard,) = synth.resources(MAIN, "AWS::CloudWatch::Dashboard").values()
    body = dump(dashboard["Properties"]["DashboardBody"])
    assert "Monitor prod-hr: pass rate per metric" in body
    assert "{evalrunner/monitor,Metric,Suite,Target}" in body and "prod-hr" in body
