"""The runner bucket (suites, run intermediates, reports), its access-log bucket, and the
exact, prefix-scoped S3 permissions every role of the stack is given on it."""

from __future__ import annotations

from aws_cdk import Duration, RemovalPolicy, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_s3 as s3

from evalrunner.storage import REPORTS_PREFIX, RUNS_PREFIX
from infra.config import RunnerConfig
from infra.parts.common import acknowledge


class RunnerBucket:
    """Builds the two buckets in ``stack``'s scope; :meth:`grant` gives a role access."""

    def __init__(self, stack: Stack, *, config: RunnerConfig, removal: RemovalPolicy) -> None:
        self.access_logs = s3.Bucket(
            stack,
            "AccessLogs",
            encryption=s3.BucketEncryption.S3_MANAGED,
            block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
            enforce_ssl=True,
            object_ownership=s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
            lifecycle_rules=[
                s3.LifecycleRule(id="expire-access-logs", expiration=Duration.days(365))
            ],
            removal_policy=removal,
        )
        acknowledge(
            self.access_logs,
            "AwsSolutions-S1",
            "This is the server access log bucket of the runner bucket; logging it to itself "
            "would log its own log deliveries.",
        )
        self.bucket = s3.Bucket(
            stack,
            "RunnerBucket",
            encryption=s3.BucketEncryption.S3_MANAGED,
            block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
            enforce_ssl=True,
            versioned=True,
            object_ownership=s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
            server_access_logs_bucket=self.access_logs,
            server_access_logs_prefix="runner-bucket/",
            lifecycle_rules=[
                s3.LifecycleRule(
                    id="expire-run-intermediates",
                    prefix=RUNS_PREFIX,
                    expiration=Duration.days(config.runs_expiration_days),
                    noncurrent_version_expiration=Duration.days(1),
                ),
                *self._monitor_retention(config),
                s3.LifecycleRule(
                    id="expire-old-versions",
                    noncurrent_version_expiration=Duration.days(config.noncurrent_version_days),
                    abort_incomplete_multipart_upload_after=Duration.days(7),
                ),
            ],
            removal_policy=removal,
        )
        # S3 -> EventBridge, natively: the L2's event_bridge_enabled would add a custom
        # resource (a Lambda function and its role) to do what CloudFormation does itself.
        cfn_bucket = self.bucket.node.default_child
        assert isinstance(cfn_bucket, s3.CfnBucket)
        cfn_bucket.add_property_override(
            "NotificationConfiguration.EventBridgeConfiguration.EventBridgeEnabled", True
        )
        self.bucket_id = stack.get_logical_id(cfn_bucket)

    @staticmethod
    def _monitor_retention(config: RunnerConfig) -> list[s3.LifecycleRule]:
        """The stored copies of production text (cdk.json ``monitor.retention_days``): the
        suites the monitor writes and the monitor's reports, current and older versions
        alike. The watermark (``monitor/``) is kept: it is what prevents scoring twice."""
        monitor = config.monitor
        if monitor is None:
            return []
        days = Duration.days(monitor.retention_days)
        return [
            s3.LifecycleRule(
                id=f"expire-monitor-{what}",
                prefix=prefix,
                expiration=days,
                noncurrent_version_expiration=Duration.days(1),
            )
            for what, prefix in (
                ("suites", monitor.suite_prefix()),
                ("reports", f"{REPORTS_PREFIX}{monitor.name}/"),
            )
        ]

    def objects(self, prefix: str) -> str:
        """The ARN pattern of the objects under ``prefix``."""
        return self.bucket.arn_for_objects(f"{prefix}*")

    def grant(
        self,
        role: iam.IRole,
        *,
        read: tuple[str, ...] = (),
        write: tuple[str, ...] = (),
        delete: tuple[str, ...] = (),
        tags: tuple[str, ...] = (),
        list_bucket: bool = True,
    ) -> None:
        """Exact S3 actions on key prefixes of the runner bucket, and the acknowledgment of
        the prefix wildcards they need (keys are per run, per suite, per report)."""
        statements = [
            (["s3:GetObject"], read),
            (["s3:PutObject"], write),
            (["s3:DeleteObject"], delete),
            (["s3:GetObjectTagging"], tags),
        ]
        prefixes: set[str] = set()
        for actions, keys in statements:
            if keys:
                role.add_to_principal_policy(
                    iam.PolicyStatement(actions=actions, resources=[self.objects(k) for k in keys])
                )
                prefixes.update(keys)
        if list_bucket:
            # Without ListBucket, S3 answers a missing key with 403 instead of 404, and the
            # user would read "access denied" where "s3://.../x.xlsx does not exist; upload
            # it first" is meant (a prefix condition would not help: the check is bucket-wide).
            role.add_to_principal_policy(
                iam.PolicyStatement(actions=["s3:ListBucket"], resources=[self.bucket.bucket_arn])
            )
        for prefix in sorted(prefixes):
            acknowledge(
                role,
                f"AwsSolutions-IAM5[Resource::<{self.bucket_id}.Arn>/{prefix}*]",
                f"Objects under {prefix} are named per run, suite or report; access is limited "
                "to that prefix of the runner bucket.",
            )
