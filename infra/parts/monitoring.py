"""The monitor of production traffic (cdk.json ``monitor``): its function, the EventBridge
Scheduler schedule that invokes it, what its role may do (read the log prefix, keep its
watermark, write the masked suite, start the test runner), what Aggregate needs to publish a
monitor run's series, the alarms on a drop of a pass rate against its trailing baseline, and
the retention of the stored copies of production text."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from aws_cdk import ArnFormat, Aws, Duration, Stack
from aws_cdk import aws_cloudwatch as cw
from aws_cdk import aws_cloudwatch_actions as cw_actions
from aws_cdk import aws_ecr_assets as ecr_assets
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_scheduler as scheduler
from aws_cdk import aws_sns as sns

from evalrunner.privacy import ENV_PII
from infra.monitor_config import WATERMARK_PREFIX, MonitorConfig
from infra.ner_image import stage_image
from infra.parts.bucket import RunnerBucket
from infra.parts.common import acknowledge, role_of
from infra.parts.functions import CODE_PACKAGES, PipelineFunctions

#: The monitor function's settings (``evalrunner.monitor.deployed``: ENV_SOURCE,
#: ENV_STATE_MACHINE).
ENV_SOURCE = "EVALRUNNER_MONITOR_SOURCE"
ENV_STATE_MACHINE = "EVALRUNNER_STATE_MACHINE_ARN"
#: The series the alarms watch: a pass rate is higher-is-better for every metric, so a drop
#: is always bad news (an Average may be of a lower-is-better metric).
ALARMED_SERIES = "PassRate"


class ProductionMonitor:
    """Builds the monitor's resources in ``stack``'s scope."""

    def __init__(
        self,
        stack: Stack,
        *,
        config: MonitorConfig,
        functions: PipelineFunctions,
        storage: RunnerBucket,
        state_machine_arn: str,
        topic: sns.ITopic,
        state_machine_name: str,
    ) -> None:
        self.config = config
        self.function = functions.function(
            "Monitor",
            "lambdas.monitor.handler",
            f"Score production interactions of {config.source} since the last watermark.",
            memory=config.memory_mb,
            timeout=Duration.minutes(config.timeout_minutes),
            env={
                "EVALRUNNER_BUCKET": storage.bucket.bucket_name,
                ENV_STATE_MACHINE: state_machine_arn,
                ENV_SOURCE: config.source,
                ENV_PII: config.pii.env_value(),
            },
            # One at a time: two overlapping runs would both take the interactions past
            # the same watermark.
            reserved=1,
            image=self._image(functions) if config.pii.with_names() else None,
        )
        self._permissions(stack, storage, state_machine_arn)
        self._follow_runs(stack, state_machine_name)
        self.schedule = self._schedule(stack)
        self._signals(functions.aggregate_fn)
        self.alarms = self._alarms(stack, topic)

    def _image(self, functions: PipelineFunctions) -> lambda_.DockerImageCode:
        """The monitor as a container image with spaCy and the names model
        (:mod:`infra.ner_image`); staged here, built by ``cdk deploy``."""
        # Kept as long as this object: CDK copies the folder into the cloud assembly.
        self._staging = tempfile.TemporaryDirectory(prefix="evalrunner-monitor-image-")
        root = stage_image(
            Path(self._staging.name),
            self.config.pii.model_folder(),
            CODE_PACKAGES,
            functions.config.plugin_paths(),
        )
        return lambda_.DockerImageCode.from_image_asset(
            str(root), platform=ecr_assets.Platform.LINUX_AMD64
        )

    def _permissions(self, stack: Stack, storage: RunnerBucket, state_machine_arn: str) -> None:
        config = self.config
        role = role_of(self.function)
        suites = config.suite_prefix()
        # the watermark (read, moved); the suite it writes and reads back to check it
        storage.grant(role, read=(WATERMARK_PREFIX, suites), write=(WATERMARK_PREFIX, suites))
        bucket, prefix = config.source_bucket(), config.source_prefix()
        source_objects = f"arn:{Aws.PARTITION}:s3:::{bucket}/{prefix}*"
        role.add_to_principal_policy(
            iam.PolicyStatement(
                sid="ReadLogSource", actions=["s3:GetObject"], resources=[source_objects]
            )
        )
        role.add_to_principal_policy(
            iam.PolicyStatement(
                sid="ListLogSource",
                actions=["s3:ListBucket"],
                resources=[f"arn:{Aws.PARTITION}:s3:::{bucket}"],
                conditions={"StringLike": {"s3:prefix": [f"{prefix}*"]}},
            )
        )
        acknowledge(
            role,
            f"AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:s3:::{bucket}/{prefix}*]",
            "The monitor reads the log files written under the configured source prefix; their "
            "names are the logging service's, so the grant is the prefix.",
        )
        large = config.large_bodies_location()
        if large is not None:
            # Bedrock's bodies over 100 KB, stored apart; the handler reads each one a log
            # record names (inputBodyS3Path / outputBodyS3Path) and nothing else there
            bodies = f"arn:{Aws.PARTITION}:s3:::{large[0]}/{large[1]}*"
            role.add_to_principal_policy(
                iam.PolicyStatement(
                    sid="ReadLargeBodies", actions=["s3:GetObject"], resources=[bodies]
                )
            )
            acknowledge(
                role,
                f"AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:s3:::{large[0]}/{large[1]}*]",
                "The monitor reads the invocation bodies Bedrock stores apart under the "
                "configured large_bodies prefix; their names are Bedrock's, so the grant is "
                "the prefix.",
            )
        if config.source_kms_key_arn:
            role.add_to_principal_policy(
                iam.PolicyStatement(
                    sid="DecryptLogSource",
                    actions=["kms:Decrypt"],
                    resources=[config.source_kms_key_arn],
                )
            )
        role.add_to_principal_policy(
            iam.PolicyStatement(actions=["states:StartExecution"], resources=[state_machine_arn])
        )

    def _follow_runs(self, stack: Stack, state_machine_name: str) -> None:
        """The runs it started are followed until they end (a failed one is started again:
        ``evalrunner.monitor.follow_up``): it may describe the runner's executions."""
        role = role_of(self.function)
        executions = stack.format_arn(
            service="states",
            resource="execution",
            resource_name=f"{state_machine_name}:*",
            arn_format=ArnFormat.COLON_RESOURCE_NAME,
        )
        role.add_to_principal_policy(
            iam.PolicyStatement(
                sid="FollowRuns", actions=["states:DescribeExecution"], resources=[executions]
            )
        )
        acknowledge(
            role,
            f"AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:states:<AWS::Region>:"
            f"<AWS::AccountId>:execution:{state_machine_name}:*]",
            "The monitor follows the executions it started of the test runner (their names "
            "are made per run), to start a failed one again.",
        )

    def _schedule(self, stack: Stack) -> scheduler.CfnSchedule:
        config = self.config
        role = iam.Role(
            stack,
            "MonitorSchedulerRole",
            assumed_by=iam.ServicePrincipal(
                "scheduler.amazonaws.com",
                conditions={"StringEquals": {"aws:SourceAccount": Aws.ACCOUNT_ID}},
            ),
            description="evalrunner monitor schedule: invoke the monitor function",
        )
        role.add_to_principal_policy(
            iam.PolicyStatement(
                actions=["lambda:InvokeFunction"], resources=[self.function.function_arn]
            )
        )
        return scheduler.CfnSchedule(
            stack,
            "MonitorSchedule",
            description=f"evalrunner monitor {config.name}: {config.source}",
            schedule_expression=config.schedule,
            schedule_expression_timezone=config.timezone,
            flexible_time_window=scheduler.CfnSchedule.FlexibleTimeWindowProperty(mode="OFF"),
            state="ENABLED" if config.enabled else "DISABLED",
            target=scheduler.CfnSchedule.TargetProperty(
                arn=self.function.function_arn,
                role_arn=role.role_arn,
                input=json.dumps(config.run_input(), separators=(",", ":")),
                # a failed invocation moved no watermark: trying again takes the same records
                retry_policy=scheduler.CfnSchedule.RetryPolicyProperty(
                    maximum_retry_attempts=2, maximum_event_age_in_seconds=3600
                ),
            ),
        )

    def _signals(self, aggregate_fn: lambda_.Function) -> None:
        """Aggregate puts a monitor run's series (``evalrunner.signals``) into the namespace,
        and only there."""
        signals = self.config.signals
        for name, value in signals.env().items():
            aggregate_fn.add_environment(name, value)
        role = role_of(aggregate_fn)
        role.add_to_principal_policy(
            iam.PolicyStatement(
                sid="PutMonitorSeries",
                actions=["cloudwatch:PutMetricData"],
                resources=["*"],
                conditions={"StringEquals": {"cloudwatch:namespace": signals.namespace}},
            )
        )
        acknowledge(
            role,
            "AwsSolutions-IAM5[Resource::*]",
            "cloudwatch:PutMetricData has no resource-level permissions; the grant is limited "
            "to the monitor's namespace by the cloudwatch:namespace condition.",
        )

    def widgets(self) -> list[cw.IWidget]:
        """The dashboard's row for the monitor: every metric's pass rate, and its alarms."""
        config = self.config
        hour = Duration.hours(1)
        query = (
            f"{{{config.signals.namespace},Metric,Suite,Target}} "
            f'MetricName="{ALARMED_SERIES}" Target="{config.name}"'
        )
        search = f"SEARCH('{query}', 'Average', 3600)"
        return [
            cw.GraphWidget(
                title=f"Monitor {config.name}: pass rate per metric",
                left=[cw.MathExpression(expression=search, label="", period=hour)],
                left_y_axis=cw.YAxisProps(min=0, max=1),
                width=16,
            ),
            cw.AlarmStatusWidget(title=f"Monitor {config.name}", alarms=self.alarms, width=8),
        ]

    def _alarms(self, stack: Stack, topic: sns.ITopic) -> list[cw.Alarm]:
        config = self.config
        action = cw_actions.SnsAction(topic)
        period = Duration.minutes(config.alarms.period_minutes)
        alarms: list[cw.Alarm] = []
        errors = cw.Alarm(
            stack,
            "MonitorErrorsAlarm",
            alarm_description=f"evalrunner monitor {config.name}: the scheduled function failed "
            "(no run was started; its log says why).",
            metric=self.function.metric_errors(period=Duration.minutes(5), statistic="Sum"),
            threshold=1,
            evaluation_periods=1,
            comparison_operator=cw.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
            treat_missing_data=cw.TreatMissingData.NOT_BREACHING,
        )
        errors.add_alarm_action(action)
        alarms.append(errors)
        for n, metric in enumerate(config.alarms.metrics):
            alarm = cw.AnomalyDetectionAlarm(
                stack,
                f"MonitorDropAlarm{n}",
                alarm_description=f"evalrunner monitor {config.name}: the pass rate of {metric} "
                f"fell below its trailing baseline ({config.alarms.band:g} standard deviations "
                "under the expected band). The run's report lists the worst interactions.",
                metric=cw.Metric(
                    namespace=config.signals.namespace,
                    metric_name=ALARMED_SERIES,
                    dimensions_map={
                        "Target": config.name,
                        "Suite": config.suite_label(),
                        "Metric": metric,
                    },
                    period=period,
                    statistic="Average",
                ),
                std_devs=config.alarms.band,
                evaluation_periods=config.alarms.evaluation_periods,
                comparison_operator=cw.ComparisonOperator.LESS_THAN_LOWER_THRESHOLD,
                # no run in a period (nothing new to score) is no drop
                treat_missing_data=cw.TreatMissingData.NOT_BREACHING,
            )
            alarm.add_alarm_action(action)
            alarms.append(alarm)
        return alarms
