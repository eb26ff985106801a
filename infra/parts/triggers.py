"""What starts runs besides the CLI: a suite uploaded under ``test-suites/`` (an EventBridge
rule on the bucket's native S3 events, to the StartFromUpload function) and the scheduled
runs of ``cdk.json`` (EventBridge Scheduler, straight to the state machine)."""

from __future__ import annotations

import json

from aws_cdk import Aws, Duration, Stack
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as events_targets
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_scheduler as scheduler
from aws_cdk import aws_stepfunctions as sfn

from evalrunner.event import SUITE_PREFIX
from infra.config import RunnerConfig

#: Suites that start a run when uploaded (EventBridge wildcards are case-sensitive).
UPLOAD_SUFFIXES = ("xlsx", "xlsm", "csv", "json", "jsonl")


def upload_trigger(
    stack: Stack, *, bucket: s3.IBucket, upload_fn: lambda_.IFunction
) -> events.Rule:
    """The rule, in ``stack``'s scope, that hands an uploaded suite to ``upload_fn``."""
    keys = [
        events.Match.wildcard(f"{SUITE_PREFIX}*.{suffix}")
        for ext in UPLOAD_SUFFIXES
        for suffix in (ext, ext.upper())
    ]
    rule = events.Rule(
        stack,
        "SuiteUploaded",
        description="evalrunner: a suite uploaded under test-suites/ starts a run",
        event_pattern=events.EventPattern(
            source=["aws.s3"],
            detail_type=["Object Created"],
            detail={
                "bucket": {"name": [bucket.bucket_name]},
                "object": {"key": events.Match.any_of(*keys)},
            },
        ),
        targets=[
            events_targets.LambdaFunction(
                upload_fn, retry_attempts=4, max_event_age=Duration.hours(2)
            )
        ],
    )
    return rule


def schedules(
    stack: Stack,
    *,
    config: RunnerConfig,
    state_machine: sfn.StateMachine,
    state_machine_arn: str,
) -> list[scheduler.CfnSchedule]:
    """One EventBridge Scheduler schedule per ``cdk.json`` schedule (and their role), in
    ``stack``'s scope; none without schedules."""
    out: list[scheduler.CfnSchedule] = []
    if not config.schedules:
        return out
    role = iam.Role(
        stack,
        "SchedulerRole",
        assumed_by=iam.ServicePrincipal(
            "scheduler.amazonaws.com",
            conditions={"StringEquals": {"aws:SourceAccount": Aws.ACCOUNT_ID}},
        ),
        description="evalrunner scheduled runs: start the test runner",
    )
    role.add_to_principal_policy(
        iam.PolicyStatement(actions=["states:StartExecution"], resources=[state_machine_arn])
    )
    for schedule in config.schedules:
        out.append(
            scheduler.CfnSchedule(
                stack,
                f"Schedule-{schedule.name}",
                description=f"evalrunner scheduled run {schedule.name}: {schedule.key}",
                schedule_expression=schedule.expression,
                schedule_expression_timezone=schedule.timezone,
                flexible_time_window=scheduler.CfnSchedule.FlexibleTimeWindowProperty(mode="OFF"),
                state="ENABLED" if schedule.enabled else "DISABLED",
                target=scheduler.CfnSchedule.TargetProperty(
                    arn=state_machine.state_machine_arn,
                    role_arn=role.role_arn,
                    input=json.dumps(schedule.run_event(), separators=(",", ":")),
                    retry_policy=scheduler.CfnSchedule.RetryPolicyProperty(
                        maximum_retry_attempts=3, maximum_event_age_in_seconds=3600
                    ),
                ),
            )
        )
    return out
