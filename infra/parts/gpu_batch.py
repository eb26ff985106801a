"""GPU scoring on AWS Batch: a VPC without NAT, a GPU compute environment, the job queue, the
scoring image (a Docker image asset that ``cdk synth`` only stages) and the job definition."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import aws_cdk as cdk
from aws_cdk import Aws, Duration, IgnoreMode, RemovalPolicy, Stack
from aws_cdk import aws_batch as batch
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_ecr_assets as ecr_assets
from aws_cdk import aws_ecs as ecs
from aws_cdk import aws_iam as iam
from aws_cdk import aws_logs as logs

from evalrunner.storage import RUNS_PREFIX
from infra.config import RunnerConfig
from infra.parts.bucket import RunnerBucket
from infra.parts.common import REPO_ROOT, SERVICE, acknowledge, retention
from infra.parts.functions import CODE_PACKAGES, stage_code

#: The GPU image's build context: the packages, gpu_tasks/ and what ``pip install .`` needs.
IMAGE_EXCLUDES = [
    "*",
    ".*",
    *(p for pkg in (*CODE_PACKAGES, "gpu_tasks") for p in (f"!{pkg}", f"!{pkg}/**")),
    "!pyproject.toml",
    "!README.md",
    "**/__pycache__",
    "**/*.pyc",
]


#: Where the image's build context holds cdk.json ``plugins`` (copied with gpu_tasks/ by the
#: Dockerfile) and where the container finds them (its PYTHONPATH).
IMAGE_PLUGINS = "gpu_tasks/plugins"
IMAGE_PLUGINS_PATH = f"/opt/evalrunner/{IMAGE_PLUGINS}"


class GpuBatch:
    """Builds GPU scoring in ``stack``'s scope (only when ``batch_scoring`` is enabled)."""

    def _image(self, stack: Stack, config: RunnerConfig) -> ecr_assets.DockerImageAsset:
        """The scoring image, staged (never built) at synth: the repository's code, and with
        cdk.json ``plugins`` a build context that also holds them under IMAGE_PLUGINS."""
        common: dict[str, Any] = {
            "file": "gpu_tasks/Dockerfile",
            "platform": ecr_assets.Platform.LINUX_AMD64,
        }
        paths = config.plugin_paths()
        if not paths:
            return ecr_assets.DockerImageAsset(
                stack,
                "GpuImage",
                directory=str(REPO_ROOT),
                exclude=IMAGE_EXCLUDES,
                ignore_mode=IgnoreMode.GLOB,
                **common,
            )
        # Kept as long as this object: CDK stages the context when the asset is created.
        self._staging = tempfile.TemporaryDirectory(prefix="evalrunner-image-")
        names = (*CODE_PACKAGES, "gpu_tasks", "pyproject.toml", "README.md")
        stage_code(Path(self._staging.name), names, paths, IMAGE_PLUGINS)
        return ecr_assets.DockerImageAsset(
            stack, "GpuImage", directory=self._staging.name, **common
        )

    def __init__(
        self,
        stack: Stack,
        *,
        config: RunnerConfig,
        removal: RemovalPolicy,
        storage: RunnerBucket,
    ) -> None:
        cfg = config.batch_scoring
        flow_logs = logs.LogGroup(
            stack,
            "BatchVpcFlowLogs",
            retention=retention(config.log_retention_days),
            removal_policy=removal,
        )
        # Public subnets, no NAT gateway: the GPU instances only reach ECR, S3 and CloudWatch
        # (S3 through a gateway endpoint), and accept no inbound traffic.
        vpc = ec2.Vpc(
            stack,
            "BatchVpc",
            max_azs=2,
            nat_gateways=0,
            subnet_configuration=[
                ec2.SubnetConfiguration(
                    name="batch", subnet_type=ec2.SubnetType.PUBLIC, cidr_mask=24
                )
            ],
            gateway_endpoints={
                "S3": ec2.GatewayVpcEndpointOptions(service=ec2.GatewayVpcEndpointAwsService.S3)
            },
            flow_logs={
                "all": ec2.FlowLogOptions(
                    destination=ec2.FlowLogDestination.to_cloud_watch_logs(flow_logs),
                    traffic_type=ec2.FlowLogTrafficType.REJECT,
                )
            },
            # Nothing uses the default security group; restricting it would add a custom
            # resource (a Lambda function) to the stack.
            restrict_default_security_group=False,
        )
        security_group = ec2.SecurityGroup(
            stack,
            "BatchSecurityGroup",
            vpc=vpc,
            description="evalrunner GPU scoring instances: no inbound traffic",
            allow_all_outbound=True,
        )
        compute = batch.ManagedEc2EcsComputeEnvironment(
            stack,
            "GpuCompute",
            vpc=vpc,
            vpc_subnets=ec2.SubnetSelection(subnet_type=ec2.SubnetType.PUBLIC),
            security_groups=[security_group],
            instance_types=[ec2.InstanceType(t) for t in cfg.instance_types],
            use_optimal_instance_classes=False,
            # Amazon Linux 2023's ECS GPU AMI: its NVIDIA driver runs the image's CUDA build
            # (Amazon Linux 2's, ECS_AL2_NVIDIA, ships an older driver and is past standard
            # support).
            images=[batch.EcsMachineImage(image_type=batch.EcsMachineImageType.ECS_AL2023_NVIDIA)],
            minv_cpus=0,
            maxv_cpus=cfg.max_vcpus,
            spot=cfg.spot,
            allocation_strategy=(
                batch.AllocationStrategy.SPOT_PRICE_CAPACITY_OPTIMIZED
                if cfg.spot
                else batch.AllocationStrategy.BEST_FIT_PROGRESSIVE
            ),
            update_to_latest_image_version=True,
        )
        acknowledge(
            compute,
            "AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/"
            "AmazonEC2ContainerServiceforEC2Role]",
            "The AWS-managed ECS instance policy is what Batch's ECS container instances need "
            "to register with their cluster; AWS maintains it with the ECS agent.",
        )
        self.job_queue = batch.JobQueue(
            stack,
            "GpuQueue",
            compute_environments=[
                batch.OrderedComputeEnvironment(compute_environment=compute, order=1)
            ],
            # A job that cannot start (no G-instance quota, no capacity, a requirement no
            # instance type meets) is cancelled instead of waiting RUNNABLE for ever; the
            # state machine's ScoreOnBatch then fails and Aggregate says why (README, Deploy).
            job_state_time_limit_actions=[
                batch.JobStateTimeLimitAction(
                    max_time=Duration.minutes(cfg.queue_timeout_minutes),
                    reason=reason,
                    action=batch.JobStateTimeLimitActionsAction.CANCEL,
                    state=batch.JobStateTimeLimitActionsState.RUNNABLE,
                )
                for reason in (
                    batch.JobStateTimeLimitActionsReason.INSUFFICIENT_INSTANCE_CAPACITY,
                    batch.JobStateTimeLimitActionsReason.COMPUTE_ENVIRONMENT_MAX_RESOURCE,
                    batch.JobStateTimeLimitActionsReason.JOB_RESOURCE_REQUIREMENT,
                )
            ],
        )
        image = self._image(stack, config)
        job_role = iam.Role(
            stack,
            "GpuJobRole",
            assumed_by=iam.ServicePrincipal("ecs-tasks.amazonaws.com"),
            description="evalrunner GPU scoring job: reads and writes the run's intermediates",
        )
        storage.grant(
            job_role,
            read=(RUNS_PREFIX,),
            write=(RUNS_PREFIX,),
        )
        job_logs = logs.LogGroup(
            stack,
            "GpuJobLogs",
            retention=retention(config.log_retention_days),
            removal_policy=removal,
        )
        container = batch.EcsEc2ContainerDefinition(
            stack,
            "GpuScoreContainer",
            image=ecs.ContainerImage.from_docker_image_asset(image),
            cpu=cfg.vcpus,
            memory=cdk.Size.mebibytes(cfg.memory_mib),
            gpu=cfg.gpus,
            job_role=job_role,
            environment={
                "EVALRUNNER_BUCKET": storage.bucket.bucket_name,
                "AWS_DEFAULT_REGION": Aws.REGION,
                **_powertools(config),
                # The job builds the run's context, which imports the run's plugins: the
                # image holds them (IMAGE_PLUGINS) and may import exactly these.
                **config.plugins_env(),
                **({"PYTHONPATH": IMAGE_PLUGINS_PATH} if config.plugins else {}),
            },
            logging=ecs.LogDriver.aws_logs(stream_prefix="gpu-score", log_group=job_logs),
            readonly_root_filesystem=False,
        )
        acknowledge(
            container.execution_role,
            "AwsSolutions-IAM5[Resource::*]",
            "ecr:GetAuthorizationToken, which pulling the image needs, does not support "
            "resource-level permissions; the pull itself is scoped to the asset repository.",
        )
        self.job_definition = batch.EcsJobDefinition(
            stack,
            "GpuScoreJob",
            container=container,
            retry_attempts=cfg.attempts,
            retry_strategies=[
                batch.RetryStrategy.of(batch.Action.RETRY, batch.Reason.SPOT_INSTANCE_RECLAIMED),
                batch.RetryStrategy.of(batch.Action.EXIT, batch.Reason.custom(on_reason="*")),
            ],
            timeout=Duration.minutes(cfg.timeout_minutes),
        )


def _powertools(config: RunnerConfig) -> dict[str, str]:
    return {
        "POWERTOOLS_SERVICE_NAME": SERVICE,
        "POWERTOOLS_LOG_LEVEL": config.log_level,
    }
