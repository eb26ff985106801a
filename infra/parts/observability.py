"""Telling people about runs: the encrypted SNS topic (run summaries and alarms, with the
optional e-mail subscription), the two alarms, and the CloudWatch dashboard."""

from __future__ import annotations

from collections.abc import Sequence

from aws_cdk import Aws, Duration, RemovalPolicy, Stack
from aws_cdk import aws_cloudwatch as cw
from aws_cdk import aws_cloudwatch_actions as cw_actions
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sns_subscriptions as subscriptions
from aws_cdk import aws_stepfunctions as sfn

from evalrunner.storage import REPORTS_PREFIX
from evalrunner.upload import REJECTED_PREFIX
from infra.config import RunnerConfig
from infra.parts.common import METRICS_NAMESPACE


class RunsTopic:
    """The SNS topic and its KMS key, built in ``stack``'s scope."""

    def __init__(self, stack: Stack, *, config: RunnerConfig, removal: RemovalPolicy) -> None:
        self.topic_key = kms.Key(
            stack,
            "TopicKey",
            description="evalrunner: encrypts the run notifications topic",
            enable_key_rotation=True,
            removal_policy=removal,
        )
        # CloudWatch alarms publish to the encrypted topic.
        self.topic_key.add_to_resource_policy(
            iam.PolicyStatement(
                principals=[iam.ServicePrincipal("cloudwatch.amazonaws.com")],
                actions=["kms:Decrypt", "kms:GenerateDataKey*"],
                resources=["*"],
                conditions={"StringEquals": {"aws:SourceAccount": Aws.ACCOUNT_ID}},
            )
        )
        self.topic = sns.Topic(
            stack,
            "RunsTopic",
            display_name="evalrunner runs",
            master_key=self.topic_key,
            enforce_ssl=True,
        )
        if config.alarm_email:
            self.topic.add_subscription(subscriptions.EmailSubscription(config.alarm_email))


class Watching:
    """The alarms (to the topic) and the dashboard, built in ``stack``'s scope."""

    def __init__(
        self,
        stack: Stack,
        *,
        topic: sns.ITopic,
        state_machine: sfn.StateMachine,
        state_machine_name: str,
        bucket: s3.IBucket,
        upload_fn: lambda_.Function,
        functions: Sequence[lambda_.Function],
    ) -> None:
        sm = state_machine
        five = Duration.minutes(5)
        action = cw_actions.SnsAction(topic)
        failed = executions_failed_alarm(
            stack,
            "RunsFailedAlarm",
            sm,
            topic,
            label="Failed runs",
            description="evalrunner: a run (state machine execution) failed, timed out "
            "or was aborted. Bad input fails in Prepare with the reason; see the execution.",
        )
        upload_errors = cw.Alarm(
            stack,
            "UploadTriggerErrorsAlarm",
            alarm_description="evalrunner: the upload trigger failed on an uploaded suite (not "
            "a rejection: those land in test-reports/_rejected/).",
            metric=upload_fn.metric_errors(period=five, statistic="Sum"),
            threshold=1,
            evaluation_periods=1,
            comparison_operator=cw.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
            treat_missing_data=cw.TreatMissingData.NOT_BREACHING,
        )
        upload_errors.add_alarm_action(action)
        self.alarms = [failed, upload_errors]

        hour = Duration.hours(1)
        self.dashboard = cw.Dashboard(
            stack,
            "Dashboard",
            default_interval=Duration.days(7),
            widgets=[
                [
                    cw.TextWidget(
                        markdown=f"# evalrunner\nRuns of `{state_machine_name}`. Reports: "
                        f"`s3://{bucket.bucket_name}/{REPORTS_PREFIX}<target>/`; rejected "
                        f"uploads: `{REJECTED_PREFIX}`.",
                        width=24,
                        height=2,
                    )
                ],
                [
                    cw.GraphWidget(
                        title="Runs",
                        left=[
                            sm.metric_started(period=hour, statistic="Sum", label="started"),
                            sm.metric_succeeded(period=hour, statistic="Sum", label="succeeded"),
                            sm.metric_failed(period=hour, statistic="Sum", label="failed"),
                            sm.metric_timed_out(period=hour, statistic="Sum", label="timed out"),
                        ],
                        width=8,
                    ),
                    cw.GraphWidget(
                        title="Run duration",
                        left=[
                            sm.metric_time(period=hour, statistic="p50", label="p50"),
                            sm.metric_time(period=hour, statistic="p90", label="p90"),
                            sm.metric_time(period=hour, statistic="Maximum", label="max"),
                        ],
                        width=8,
                    ),
                    cw.AlarmStatusWidget(title="Alarms", alarms=self.alarms, width=8),
                ],
                [
                    cw.GraphWidget(
                        title="Pass rate per metric",
                        left=[
                            cw.MathExpression(
                                expression=f'SEARCH(\'Namespace="{METRICS_NAMESPACE}" '
                                "MetricName=\"PassRate\"', 'Average', 3600)",
                                label="",
                                period=hour,
                            )
                        ],
                        left_y_axis=cw.YAxisProps(min=0, max=1),
                        width=12,
                    ),
                    cw.GraphWidget(
                        title="Failures",
                        left=[
                            sm.metric_failed(period=hour, statistic="Sum", label="failed runs"),
                            *(
                                f.metric_errors(
                                    period=hour, statistic="Sum", label=f"{f.node.id} errors"
                                )
                                for f in functions
                            ),
                        ],
                        width=12,
                    ),
                ],
            ],
        )


def executions_failed_alarm(
    stack: Stack,
    construct_id: str,
    machine: sfn.StateMachine,
    topic: sns.ITopic,
    *,
    label: str,
    description: str,
) -> cw.Alarm:
    """An alarm to ``topic`` when any execution of ``machine`` failed, timed out or was
    aborted in a five-minute period (the run and the workflow state machines alike)."""
    five = Duration.minutes(5)
    alarm = cw.Alarm(
        stack,
        construct_id,
        alarm_description=description,
        metric=cw.MathExpression(
            expression="failed + timedout + aborted",
            using_metrics={
                "failed": machine.metric_failed(period=five, statistic="Sum"),
                "timedout": machine.metric_timed_out(period=five, statistic="Sum"),
                "aborted": machine.metric_aborted(period=five, statistic="Sum"),
            },
            label=label,
            period=five,
        ),
        threshold=1,
        evaluation_periods=1,
        comparison_operator=cw.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        treat_missing_data=cw.TreatMissingData.NOT_BREACHING,
    )
    alarm.add_alarm_action(cw_actions.SnsAction(topic))
    return alarm
