"""The evalrunner stack: one bucket, five Lambda functions, the state machine from
``state_machines/test_runner.asl.json``, GPU scoring on AWS Batch, the upload trigger, the
scheduled runs, and the SNS topic, alarms and dashboard that tell people about them.

Everything the deployment may decide comes from :class:`infra.config.RunnerConfig`. Every
cdk-nag finding that is not fixed is acknowledged next to the resource it concerns, with the
reason (``_acknowledge``).

Synthesis needs neither AWS credentials, Docker nor a network: the stack is
environment-agnostic, the Lambda code is an asset of the repository itself, its dependencies
a layer built beforehand by ``make lambda-package``, and the GPU image a Docker image asset
that ``cdk synth`` only stages (``cdk deploy`` builds it).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import aws_cdk as cdk
from aws_cdk import (
    Acknowledgment,
    Aws,
    CfnOutput,
    Duration,
    IgnoreMode,
    RemovalPolicy,
    Stack,
    Validations,
)
from aws_cdk import aws_batch as batch
from aws_cdk import aws_cloudwatch as cw
from aws_cdk import aws_cloudwatch_actions as cw_actions
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_ecr_assets as ecr_assets
from aws_cdk import aws_ecs as ecs
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as events_targets
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_scheduler as scheduler
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sns_subscriptions as subscriptions
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

import state_machines
from evalrunner.event import SUITE_PREFIX
from evalrunner.network import ENV_POLICY as ENV_NETWORK_POLICY
from evalrunner.reports.publish import CLAIM_NAME
from evalrunner.secrets import ENV_POLICY as ENV_SECRETS_POLICY
from evalrunner.storage import REPORTS_PREFIX, RUNS_PREFIX
from evalrunner.targets.registry import available as target_kinds
from evalrunner.upload import ENV_DEFAULT_ITERATIONS, ENV_DEFAULT_TARGET, REJECTED_PREFIX
from infra.config import LOG_RETENTION_DAYS, RunnerConfig

REPO_ROOT = Path(__file__).resolve().parent.parent
SERVICE = "evalrunner"
#: The CloudWatch namespace of the run metrics (EMF) the dashboard charts.
METRICS_NAMESPACE = "evalrunner"
RUNTIME = lambda_.Runtime.PYTHON_3_12

#: The Lambda code asset is the repository with only these folders kept (glob, later wins).
CODE_PACKAGES = ("evalrunner", "lambdas", "state_machines")
CODE_EXCLUDES = [
    "*",
    ".*",
    *(p for pkg in CODE_PACKAGES for p in (f"!{pkg}", f"!{pkg}/**")),
    "**/__pycache__",
    "**/*.pyc",
]
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
#: Suites that start a run when uploaded (EventBridge wildcards are case-sensitive).
UPLOAD_SUFFIXES = ("xlsx", "xlsm", "csv", "json")


def _acknowledge(construct: Construct, rule: str, reason: str) -> None:
    """A cdk-nag finding, acknowledged on ``construct`` (and what it contains). cdk-nag v3
    reads CDK's own acknowledgments (it replaced v2's NagSuppressions with them); the
    ``AwsSolutions::`` prefix is the one the validation report asks for."""
    Validations.of(construct).acknowledge(Acknowledgment(id=f"AwsSolutions::{rule}", reason=reason))


class RunnerStack(Stack):
    """One evalrunner deployment. ``lambda_dependencies`` is the directory built by
    ``make lambda-package`` (checked by the app, see ``infra/app.py``)."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        config: RunnerConfig,
        lambda_dependencies: Path,
        **kwargs: Any,
    ) -> None:
        super().__init__(scope, construct_id, **kwargs)
        self.config = config
        self.removal = (
            RemovalPolicy.RETAIN if config.removal_policy == "retain" else RemovalPolicy.DESTROY
        )

        self._buckets()
        self._topic()
        self.state_machine_name = f"{self.stack_name}-test-runner"[:80]
        self.state_machine_arn = self.format_arn(
            service="states",
            resource="stateMachine",
            resource_name=self.state_machine_name,
            arn_format=cdk.ArnFormat.COLON_RESOURCE_NAME,
        )
        self._functions(lambda_dependencies)
        self._target_permissions()
        self._batch()
        self._state_machine()
        self._upload_trigger()
        self._schedules()
        self._alarms_and_dashboard()
        self._outputs()

    # ------------------------------------------------------------------ storage
    def _buckets(self) -> None:
        self.access_logs = s3.Bucket(
            self,
            "AccessLogs",
            encryption=s3.BucketEncryption.S3_MANAGED,
            block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
            enforce_ssl=True,
            object_ownership=s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
            lifecycle_rules=[
                s3.LifecycleRule(id="expire-access-logs", expiration=Duration.days(365))
            ],
            removal_policy=self.removal,
        )
        _acknowledge(
            self.access_logs,
            "AwsSolutions-S1",
            "This is the server access log bucket of the runner bucket; logging it to itself "
            "would log its own log deliveries.",
        )
        self.bucket = s3.Bucket(
            self,
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
                    expiration=Duration.days(self.config.runs_expiration_days),
                    noncurrent_version_expiration=Duration.days(1),
                ),
                s3.LifecycleRule(
                    id="expire-old-versions",
                    noncurrent_version_expiration=Duration.days(
                        self.config.noncurrent_version_days
                    ),
                    abort_incomplete_multipart_upload_after=Duration.days(7),
                ),
            ],
            removal_policy=self.removal,
        )
        # S3 -> EventBridge, natively: the L2's event_bridge_enabled would add a custom
        # resource (a Lambda function and its role) to do what CloudFormation does itself.
        cfn_bucket = self.bucket.node.default_child
        assert isinstance(cfn_bucket, s3.CfnBucket)
        cfn_bucket.add_property_override(
            "NotificationConfiguration.EventBridgeConfiguration.EventBridgeEnabled", True
        )
        self.bucket_id = self.get_logical_id(cfn_bucket)

    def _objects(self, prefix: str) -> str:
        return self.bucket.arn_for_objects(f"{prefix}*")

    def _bucket_access(
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
                    iam.PolicyStatement(actions=actions, resources=[self._objects(k) for k in keys])
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
            _acknowledge(
                role,
                f"AwsSolutions-IAM5[Resource::<{self.bucket_id}.Arn>/{prefix}*]",
                f"Objects under {prefix} are named per run, suite or report; access is limited "
                "to that prefix of the runner bucket.",
            )

    # ------------------------------------------------------------------ notifications
    def _topic(self) -> None:
        self.topic_key = kms.Key(
            self,
            "TopicKey",
            description="evalrunner: encrypts the run notifications topic",
            enable_key_rotation=True,
            removal_policy=self.removal,
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
            self,
            "RunsTopic",
            display_name="evalrunner runs",
            master_key=self.topic_key,
            enforce_ssl=True,
        )
        if self.config.alarm_email:
            self.topic.add_subscription(subscriptions.EmailSubscription(self.config.alarm_email))

    # ------------------------------------------------------------------ Lambda
    def _functions(self, dependencies: Path) -> None:
        self.code = lambda_.Code.from_asset(
            str(REPO_ROOT), exclude=CODE_EXCLUDES, ignore_mode=IgnoreMode.GLOB
        )
        self.layer = lambda_.LayerVersion(
            self,
            "Dependencies",
            code=lambda_.Code.from_asset(str(dependencies)),
            compatible_runtimes=[RUNTIME],
            compatible_architectures=[lambda_.Architecture.X86_64],
            description="evalrunner: third-party dependencies (make lambda-package), no torch",
        )
        bucket_env = {"EVALRUNNER_BUCKET": self.bucket.bucket_name}
        self.prepare_fn = self._function(
            "Prepare",
            "lambdas.prepare.handler",
            "Validate the event and the suite, write the case manifest.",
            memory=1024,
            timeout=Duration.minutes(5),
            env=bucket_env,
        )
        self._bucket_access(  # lists test-reports/ for a free report prefix
            self.prepare_fn.role,
            read=(SUITE_PREFIX,),
            write=(RUNS_PREFIX,),
        )
        # ... and claims it with a conditional put of <prefix>claim.json, nothing else there
        claims = f"{REPORTS_PREFIX}*{CLAIM_NAME}"
        self.prepare_fn.role.add_to_principal_policy(
            iam.PolicyStatement(
                actions=["s3:PutObject"], resources=[self.bucket.arn_for_objects(claims)]
            )
        )
        _acknowledge(
            self.prepare_fn.role,
            f"AwsSolutions-IAM5[Resource::<{self.bucket_id}.Arn>/{claims}]",
            "Prepare claims a run's report prefix by creating <prefix>claim.json (conditional "
            "put); report prefixes are per target and second, so the key needs a wildcard.",
        )
        self.run_case_fn = self._function(
            "RunCase",
            "lambdas.run_case.handler",
            "Call the target for one test case and score it.",
            memory=1024,
            timeout=Duration.minutes(15),
            env=bucket_env,
        )
        self._bucket_access(
            self.run_case_fn.role,
            read=(RUNS_PREFIX,),
            write=(RUNS_PREFIX,),
        )
        self.score_fn = self._function(
            "Score",
            "lambdas.score.handler",
            "Model scoring of a whole run, in-process (small runs; large ones go to Batch).",
            memory=2048,
            timeout=Duration.minutes(15),
            env=bucket_env,
        )
        self._bucket_access(
            self.score_fn.role,
            read=(RUNS_PREFIX,),
            write=(RUNS_PREFIX,),
        )
        self.aggregate_fn = self._function(
            "Aggregate",
            "lambdas.aggregate.handler",
            "Merge, compute and write the reports; publish the summary.",
            memory=2048,
            timeout=Duration.minutes(10),
            env={**bucket_env, "EVALRUNNER_TOPIC_ARN": self.topic.topic_arn},
        )
        self._bucket_access(  # reads earlier reports of the target: the baseline
            self.aggregate_fn.role,
            read=(RUNS_PREFIX, REPORTS_PREFIX),
            write=(REPORTS_PREFIX,),
        )
        self.topic.grant_publish(self.aggregate_fn.role)
        _acknowledge(
            self.aggregate_fn.role,
            "AwsSolutions-IAM5[Action::kms:GenerateDataKey*]",
            "Publishing to an SSE-KMS topic needs kms:GenerateDataKey* and kms:Decrypt (as the "
            "SNS documentation prescribes), granted on the topic's own key only.",
        )

        defaults = self.config.upload_defaults
        upload_env = {
            **bucket_env,
            "EVALRUNNER_STATE_MACHINE_ARN": self.state_machine_arn,
        }
        if defaults.target is not None:
            upload_env[ENV_DEFAULT_TARGET] = json.dumps(defaults.target, separators=(",", ":"))
        if defaults.iterations is not None:
            upload_env[ENV_DEFAULT_ITERATIONS] = str(defaults.iterations)
        self.upload_fn = self._function(
            "StartFromUpload",
            "lambdas.start_from_upload.handler",
            "Start a run for a suite uploaded under test-suites/, or write why it cannot run.",
            memory=1024,
            timeout=Duration.minutes(2),
            env=upload_env,
        )
        self._bucket_access(
            self.upload_fn.role,
            read=(SUITE_PREFIX,),
            tags=(SUITE_PREFIX,),
            write=(REJECTED_PREFIX,),
            delete=(REJECTED_PREFIX,),
        )
        self.upload_fn.role.add_to_principal_policy(
            iam.PolicyStatement(
                actions=["states:StartExecution"], resources=[self.state_machine_arn]
            )
        )

    def _function(
        self,
        name: str,
        handler: str,
        description: str,
        *,
        memory: int,
        timeout: Duration,
        env: dict[str, str],
    ) -> lambda_.Function:
        role = iam.Role(
            self,
            f"{name}Role",
            assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
            description=f"evalrunner {name} function",
        )
        log_group = logs.LogGroup(
            self,
            f"{name}Logs",
            retention=_retention(self.config.log_retention_days),
            removal_policy=self.removal,
        )
        log_group.grant_write(role)
        fn = lambda_.Function(
            self,
            name,
            runtime=RUNTIME,
            architecture=lambda_.Architecture.X86_64,
            handler=handler,
            code=self.code,
            layers=[self.layer],
            role=role,
            description=f"evalrunner: {description}",
            memory_size=memory,
            timeout=timeout,
            tracing=lambda_.Tracing.ACTIVE,
            log_group=log_group,
            environment={
                "POWERTOOLS_SERVICE_NAME": SERVICE,
                "POWERTOOLS_LOG_LEVEL": self.config.log_level,
                "POWERTOOLS_METRICS_NAMESPACE": METRICS_NAMESPACE,
                # Deployed policies (evalrunner.secrets / evalrunner.network): events may name
                # only the listed secrets, and requests to internal addresses are refused.
                ENV_SECRETS_POLICY: self.config.secrets_policy_json(),
                ENV_NETWORK_POLICY: self.config.network.policy_json(),
                **env,
            },
        )
        _redundant_role_dependency_is_intended(fn)
        _acknowledge(
            fn,
            "AwsSolutions-L1",
            "Python 3.12 is the runtime the dependencies layer is built for (make "
            "lambda-package: cp312 manylinux wheels) and the one the issue fixes; moving to a "
            "newer runtime means rebuilding the layer, a deliberate upgrade.",
        )
        _acknowledge(
            role,
            "AwsSolutions-IAM5[Resource::*]",
            "X-Ray tracing (xray:PutTraceSegments, xray:PutTelemetryRecords) does not support "
            "resource-level permissions.",
        )
        return fn

    def _target_permissions(self) -> None:
        """What the run-case role may call: the configured targets, or everything by
        explicit opt-in (allow_all_targets)."""
        role = self.run_case_fn.role
        assert role is not None
        self.runner_role = role
        t = self.config.targets
        if self.config.secrets:
            # Exactly the secrets cdk.json lists, whatever allow_all_targets says.
            role.add_to_principal_policy(
                iam.PolicyStatement(
                    sid="ReadAllowedSecrets",
                    actions=["secretsmanager:GetSecretValue"],
                    resources=list(self.config.secrets),
                )
            )
        kinds = [cls for cls in target_kinds().values() if cls.iam]
        if self.config.allow_all_targets:
            actions = [a for cls in kinds for grant in cls.iam for a in grant.actions]
            role.add_to_principal_policy(
                iam.PolicyStatement(
                    sid="AllTargetsOptIn",
                    actions=list(dict.fromkeys([*actions, "bedrock:InvokeModel"])),
                    resources=["*"],
                )
            )
            _acknowledge(
                role,
                "AwsSolutions-IAM5[Resource::*]",
                "allow_all_targets is true in cdk.json: the operator opted in, explicitly, to "
                "let the runner invoke any Lambda function, state machine, agent, knowledge "
                "base and model its account allows (and X-Ray needs '*').",
            )
            return
        for cls in kinds:  # each kind declares its statements (Target.iam)
            assert cls.deploy_list is not None, f"{cls.__name__} declares iam but no deploy_list"
            entries = getattr(t, cls.deploy_list)
            if not entries:
                continue
            for grant in cls.iam:
                resources = list(dict.fromkeys(_grant_resource(grant.resource, e) for e in entries))
                role.add_to_principal_policy(
                    iam.PolicyStatement(
                        sid=grant.sid, actions=list(grant.actions), resources=resources
                    )
                )
                if grant.wildcard_reason:
                    for resource in resources:
                        _acknowledge(
                            role, f"AwsSolutions-IAM5[Resource::{resource}]", grant.wildcard_reason
                        )
        if t.model_arns:
            role.add_to_principal_policy(
                iam.PolicyStatement(
                    sid="InvokeJudgeAndGenerationModels",
                    actions=["bedrock:InvokeModel", "bedrock:InvokeModelWithResponseStream"],
                    resources=list(t.model_arns),
                )
            )

    # ------------------------------------------------------------------ GPU scoring
    def _batch(self) -> None:
        cfg = self.config.batch_scoring
        self.job_queue: batch.JobQueue | None = None
        self.job_definition: batch.EcsJobDefinition | None = None
        if not cfg.enabled:
            return
        flow_logs = logs.LogGroup(
            self,
            "BatchVpcFlowLogs",
            retention=_retention(self.config.log_retention_days),
            removal_policy=self.removal,
        )
        # Public subnets, no NAT gateway: the GPU instances only reach ECR, S3 and CloudWatch
        # (S3 through a gateway endpoint), and accept no inbound traffic.
        vpc = ec2.Vpc(
            self,
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
            self,
            "BatchSecurityGroup",
            vpc=vpc,
            description="evalrunner GPU scoring instances: no inbound traffic",
            allow_all_outbound=True,
        )
        compute = batch.ManagedEc2EcsComputeEnvironment(
            self,
            "GpuCompute",
            vpc=vpc,
            vpc_subnets=ec2.SubnetSelection(subnet_type=ec2.SubnetType.PUBLIC),
            security_groups=[security_group],
            instance_types=[ec2.InstanceType(t) for t in cfg.instance_types],
            use_optimal_instance_classes=False,
            images=[batch.EcsMachineImage(image_type=batch.EcsMachineImageType.ECS_AL2_NVIDIA)],
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
        _acknowledge(
            compute,
            "AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/"
            "AmazonEC2ContainerServiceforEC2Role]",
            "The AWS-managed ECS instance policy is what Batch's ECS container instances need "
            "to register with their cluster; AWS maintains it with the ECS agent.",
        )
        self.job_queue = batch.JobQueue(
            self,
            "GpuQueue",
            compute_environments=[
                batch.OrderedComputeEnvironment(compute_environment=compute, order=1)
            ],
        )
        image = ecr_assets.DockerImageAsset(
            self,
            "GpuImage",
            directory=str(REPO_ROOT),
            file="gpu_tasks/Dockerfile",
            exclude=IMAGE_EXCLUDES,
            ignore_mode=IgnoreMode.GLOB,
            platform=ecr_assets.Platform.LINUX_AMD64,
        )
        job_role = iam.Role(
            self,
            "GpuJobRole",
            assumed_by=iam.ServicePrincipal("ecs-tasks.amazonaws.com"),
            description="evalrunner GPU scoring job: reads and writes the run's intermediates",
        )
        self._bucket_access(
            job_role,
            read=(RUNS_PREFIX,),
            write=(RUNS_PREFIX,),
        )
        job_logs = logs.LogGroup(
            self,
            "GpuJobLogs",
            retention=_retention(self.config.log_retention_days),
            removal_policy=self.removal,
        )
        container = batch.EcsEc2ContainerDefinition(
            self,
            "GpuScoreContainer",
            image=ecs.ContainerImage.from_docker_image_asset(image),
            cpu=cfg.vcpus,
            memory=cdk.Size.mebibytes(cfg.memory_mib),
            gpu=cfg.gpus,
            job_role=job_role,
            environment={
                "EVALRUNNER_BUCKET": self.bucket.bucket_name,
                "AWS_DEFAULT_REGION": Aws.REGION,
                **_powertools(self),
            },
            logging=ecs.LogDriver.aws_logs(stream_prefix="gpu-score", log_group=job_logs),
            readonly_root_filesystem=False,
        )
        _acknowledge(
            container.execution_role,
            "AwsSolutions-IAM5[Resource::*]",
            "ecr:GetAuthorizationToken, which pulling the image needs, does not support "
            "resource-level permissions; the pull itself is scoped to the asset repository.",
        )
        self.job_definition = batch.EcsJobDefinition(
            self,
            "GpuScoreJob",
            container=container,
            retry_attempts=2,
            retry_strategies=[
                batch.RetryStrategy.of(batch.Action.RETRY, batch.Reason.SPOT_INSTANCE_RECLAIMED),
                batch.RetryStrategy.of(batch.Action.EXIT, batch.Reason.custom(on_reason="*")),
            ],
            timeout=Duration.minutes(cfg.timeout_minutes),
        )

    # ------------------------------------------------------------------ the state machine
    def _state_machine(self) -> None:
        cfg = self.config.batch_scoring
        batch_on = self.job_queue is not None and self.job_definition is not None
        values: dict[str, str] = {
            "PrepareFunctionArn": self.prepare_fn.function_arn,
            "RunCaseFunctionArn": self.run_case_fn.function_arn,
            "ScoreFunctionArn": self.score_fn.function_arn,
            "AggregateFunctionArn": self.aggregate_fn.function_arn,
            "ChildExecutionType": "STANDARD",
            "BatchScoringEnabled": "true" if batch_on else "false",
            "BatchScoringMinItems": str(cfg.min_items),
            "BatchJobQueueArn": (
                self.job_queue.job_queue_arn
                if self.job_queue
                else self.format_arn(service="batch", resource="job-queue", resource_name="none")
            ),
            "BatchJobDefinitionArn": (
                self.job_definition.job_definition_arn
                if self.job_definition
                else self.format_arn(
                    service="batch", resource="job-definition", resource_name="none"
                )
            ),
        }
        missing = set(state_machines.PLACEHOLDERS) - set(values)
        if missing:  # a placeholder added to the ASL must be given a value here
            raise ValueError(f"no DefinitionSubstitutions for {sorted(missing)}")
        self.substitutions = values

        role = iam.Role(
            self,
            "StateMachineRole",
            assumed_by=iam.ServicePrincipal("states.amazonaws.com"),
            description="evalrunner test-runner state machine",
        )
        role.add_to_principal_policy(
            iam.PolicyStatement(
                sid="InvokePipelineFunctions",
                actions=["lambda:InvokeFunction"],
                resources=[
                    f.function_arn
                    for f in (self.prepare_fn, self.run_case_fn, self.score_fn, self.aggregate_fn)
                ],
            )
        )
        # The Distributed Map's ItemReader reads the manifest.
        self._bucket_access(role, read=(RUNS_PREFIX,), list_bucket=False)
        # The Distributed Map starts child executions of this very state machine.
        role.add_to_principal_policy(
            iam.PolicyStatement(
                sid="DistributedMapChildren",
                actions=["states:StartExecution"],
                resources=[self.state_machine_arn],
            )
        )
        children = self.format_arn(
            service="states",
            resource="execution",
            resource_name=f"{self.state_machine_name}/*",
            arn_format=cdk.ArnFormat.COLON_RESOURCE_NAME,
        )
        role.add_to_principal_policy(
            iam.PolicyStatement(
                sid="DistributedMapChildExecutions",
                actions=["states:DescribeExecution", "states:StopExecution"],
                resources=[children],
            )
        )
        _acknowledge(
            role,
            "AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:states:<AWS::Region>:"
            f"<AWS::AccountId>:execution:{self.state_machine_name}/*]",
            "The Distributed Map's child executions are named by Step Functions at run time; "
            "the wildcard covers only this state machine's executions.",
        )
        if batch_on:
            assert self.job_queue is not None and self.job_definition is not None
            role.add_to_principal_policy(
                iam.PolicyStatement(
                    sid="SubmitGpuScoringJob",
                    actions=["batch:SubmitJob"],
                    resources=[
                        self.job_queue.job_queue_arn,
                        self.job_definition.job_definition_arn,
                    ],
                )
            )
            role.add_to_principal_policy(
                iam.PolicyStatement(
                    sid="FollowGpuScoringJob",
                    actions=["batch:DescribeJobs", "batch:TerminateJob"],
                    resources=["*"],
                )
            )
            role.add_to_principal_policy(
                iam.PolicyStatement(
                    sid="BatchSyncRule",
                    actions=["events:PutTargets", "events:PutRule", "events:DescribeRule"],
                    resources=[
                        self.format_arn(
                            service="events",
                            resource="rule",
                            resource_name="StepFunctionsGetEventsForBatchJobsRule",
                        )
                    ],
                )
            )
        log_group = logs.LogGroup(
            self,
            "StateMachineLogs",
            log_group_name=f"/aws/vendedlogs/states/{self.state_machine_name}",
            retention=_retention(self.config.log_retention_days),
            removal_policy=self.removal,
        )
        self.state_machine = sfn.StateMachine(
            self,
            "TestRunner",
            state_machine_name=self.state_machine_name,
            state_machine_type=sfn.StateMachineType.STANDARD,
            definition_body=sfn.DefinitionBody.from_string(state_machines.test_runner_asl()),
            definition_substitutions=values,
            role=role,
            tracing_enabled=True,
            logs=sfn.LogOptions(
                destination=log_group, level=sfn.LogLevel.ALL, include_execution_data=False
            ),
        )
        _redundant_role_dependency_is_intended(self.state_machine)
        _acknowledge(
            role,
            "AwsSolutions-IAM5[Resource::*]",
            "CloudWatch Logs delivery (logs:CreateLogDelivery, ...), X-Ray, and Batch's "
            "DescribeJobs/TerminateJob (which .sync needs) do not support resource-level "
            "permissions.",
        )

    # ------------------------------------------------------------------ starts
    def _upload_trigger(self) -> None:
        keys = [
            events.Match.wildcard(f"{SUITE_PREFIX}*.{suffix}")
            for ext in UPLOAD_SUFFIXES
            for suffix in (ext, ext.upper())
        ]
        self.upload_rule = events.Rule(
            self,
            "SuiteUploaded",
            description="evalrunner: a suite uploaded under test-suites/ starts a run",
            event_pattern=events.EventPattern(
                source=["aws.s3"],
                detail_type=["Object Created"],
                detail={
                    "bucket": {"name": [self.bucket.bucket_name]},
                    "object": {"key": events.Match.any_of(*keys)},
                },
            ),
            targets=[
                events_targets.LambdaFunction(
                    self.upload_fn, retry_attempts=4, max_event_age=Duration.hours(2)
                )
            ],
        )

    def _schedules(self) -> None:
        self.schedules: list[scheduler.CfnSchedule] = []
        if not self.config.schedules:
            return
        role = iam.Role(
            self,
            "SchedulerRole",
            assumed_by=iam.ServicePrincipal(
                "scheduler.amazonaws.com",
                conditions={"StringEquals": {"aws:SourceAccount": Aws.ACCOUNT_ID}},
            ),
            description="evalrunner scheduled runs: start the test runner",
        )
        role.add_to_principal_policy(
            iam.PolicyStatement(
                actions=["states:StartExecution"], resources=[self.state_machine_arn]
            )
        )
        for schedule in self.config.schedules:
            self.schedules.append(
                scheduler.CfnSchedule(
                    self,
                    f"Schedule-{schedule.name}",
                    description=f"evalrunner scheduled run {schedule.name}: {schedule.key}",
                    schedule_expression=schedule.expression,
                    schedule_expression_timezone=schedule.timezone,
                    flexible_time_window=scheduler.CfnSchedule.FlexibleTimeWindowProperty(
                        mode="OFF"
                    ),
                    state="ENABLED" if schedule.enabled else "DISABLED",
                    target=scheduler.CfnSchedule.TargetProperty(
                        arn=self.state_machine.state_machine_arn,
                        role_arn=role.role_arn,
                        input=json.dumps(schedule.run_event(), separators=(",", ":")),
                        retry_policy=scheduler.CfnSchedule.RetryPolicyProperty(
                            maximum_retry_attempts=3, maximum_event_age_in_seconds=3600
                        ),
                    ),
                )
            )

    # ------------------------------------------------------------------ watching
    def _alarms_and_dashboard(self) -> None:
        sm = self.state_machine
        five = Duration.minutes(5)
        action = cw_actions.SnsAction(self.topic)
        failed = cw.Alarm(
            self,
            "RunsFailedAlarm",
            alarm_description="evalrunner: a run (state machine execution) failed, timed out "
            "or was aborted. Bad input fails in Prepare with the reason; see the execution.",
            metric=cw.MathExpression(
                expression="failed + timedout + aborted",
                using_metrics={
                    "failed": sm.metric_failed(period=five, statistic="Sum"),
                    "timedout": sm.metric_timed_out(period=five, statistic="Sum"),
                    "aborted": sm.metric_aborted(period=five, statistic="Sum"),
                },
                label="Failed runs",
                period=five,
            ),
            threshold=1,
            evaluation_periods=1,
            comparison_operator=cw.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
            treat_missing_data=cw.TreatMissingData.NOT_BREACHING,
        )
        failed.add_alarm_action(action)
        upload_errors = cw.Alarm(
            self,
            "UploadTriggerErrorsAlarm",
            alarm_description="evalrunner: the upload trigger failed on an uploaded suite (not "
            "a rejection: those land in test-reports/_rejected/).",
            metric=self.upload_fn.metric_errors(period=five, statistic="Sum"),
            threshold=1,
            evaluation_periods=1,
            comparison_operator=cw.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
            treat_missing_data=cw.TreatMissingData.NOT_BREACHING,
        )
        upload_errors.add_alarm_action(action)
        self.alarms = [failed, upload_errors]

        hour = Duration.hours(1)
        functions = (
            self.prepare_fn,
            self.run_case_fn,
            self.score_fn,
            self.aggregate_fn,
            self.upload_fn,
        )
        self.dashboard = cw.Dashboard(
            self,
            "Dashboard",
            default_interval=Duration.days(7),
            widgets=[
                [
                    cw.TextWidget(
                        markdown=f"# evalrunner\nRuns of `{self.state_machine_name}`. Reports: "
                        f"`s3://{self.bucket.bucket_name}/{REPORTS_PREFIX}<target>/`; rejected "
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

    def _outputs(self) -> None:
        outputs = {
            "BucketName": (self.bucket.bucket_name, "the runner bucket (--bucket)"),
            "StateMachineArn": (
                self.state_machine.state_machine_arn,
                "the test-runner state machine (--state-machine-arn)",
            ),
            "RunnerRoleArn": (
                self.runner_role.role_arn,
                "the role that calls targets: allow it in a target Lambda's resource policy",
            ),
            "TopicArn": (self.topic.topic_arn, "run summaries and alarms (subscribe to it)"),
            "DashboardName": (self.dashboard.dashboard_name, "the CloudWatch dashboard"),
            "StartCommand": (
                cdk.Fn.join(
                    "",
                    [
                        "evalrunner start --aws --bucket ",
                        self.bucket.bucket_name,
                        " --state-machine-arn ",
                        self.state_machine.state_machine_arn,
                        " --event event.json --suite SUITE.xlsx",
                    ],
                ),
                "start a run from a laptop",
            ),
        }
        if self.job_queue is not None:
            outputs["GpuJobQueueArn"] = (self.job_queue.job_queue_arn, "the GPU scoring queue")
        for name, (value, description) in outputs.items():
            CfnOutput(self, name, value=value, description=f"evalrunner: {description}")


def _redundant_role_dependency_is_intended(construct: Construct) -> None:
    """CDK makes a function (state machine) depend on its role *and* the role's policy, so it
    is not created before it may act; cfn-lint's W3005 calls the role half redundant (a GetAtt
    already orders it). Said in the template, so any cfn-lint run agrees."""
    resource = construct.node.default_child
    assert isinstance(resource, cdk.CfnResource)
    resource.add_metadata("cfn-lint", {"config": {"ignore_checks": ["W3005"]}})


def _grant_resource(pattern: str, entry: Any) -> str:
    """A target's IAM resource pattern (:class:`evalrunner.targets.base.IamGrant`) for one
    entry of its cdk.json list: an ARN, or an object whose region and account default to
    the stack's."""
    if isinstance(entry, str):
        parts = entry.split(":")
        fields = {
            "arn": entry,
            "partition": parts[1],
            "region": parts[3],
            "account": parts[4],
            "name": parts[6] if len(parts) > 6 else "",
        }
    else:
        fields = entry.model_dump()
        fields.update(
            partition=Aws.PARTITION,
            region=fields.get("region") or Aws.REGION,
            account=fields.get("account") or Aws.ACCOUNT_ID,
        )
    return pattern.format(**fields)


def _retention(days: int) -> logs.RetentionDays:
    """The RetentionDays member for a number of days (the config checked the number)."""
    return dict(zip(LOG_RETENTION_DAYS, logs.RetentionDays, strict=False))[days]


def _powertools(stack: RunnerStack) -> dict[str, str]:
    return {
        "POWERTOOLS_SERVICE_NAME": SERVICE,
        "POWERTOOLS_LOG_LEVEL": stack.config.log_level,
    }
