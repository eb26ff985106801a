"""The test-runner state machine: the ASL of ``state_machines/test_runner.asl.json`` with
the stack's ARNs substituted, its role (the pipeline functions, the Distributed Map's child
executions, GPU scoring jobs) and its log group."""

from __future__ import annotations

import aws_cdk as cdk
from aws_cdk import RemovalPolicy, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_logs as logs
from aws_cdk import aws_stepfunctions as sfn

import state_machines
from evalrunner.storage import RUNS_PREFIX
from infra.config import RunnerConfig
from infra.parts.bucket import RunnerBucket
from infra.parts.common import acknowledge, redundant_role_dependency_is_intended, retention
from infra.parts.functions import PipelineFunctions
from infra.parts.gpu_batch import GpuBatch


class RunnerStateMachine:
    """Builds the state machine ``name`` (whose ARN, ``arn``, the stack computed beforehand
    for the functions that start it) in ``stack``'s scope."""

    def __init__(
        self,
        stack: Stack,
        *,
        config: RunnerConfig,
        removal: RemovalPolicy,
        storage: RunnerBucket,
        functions: PipelineFunctions,
        gpu: GpuBatch | None,
        name: str,
        arn: str,
    ) -> None:
        cfg = config.batch_scoring
        job_queue = gpu.job_queue if gpu else None
        job_definition = gpu.job_definition if gpu else None
        batch_on = job_queue is not None and job_definition is not None
        values: dict[str, str] = {
            "PrepareFunctionArn": functions.prepare_fn.function_arn,
            "RunCaseFunctionArn": functions.run_case_fn.function_arn,
            "ScoreFunctionArn": functions.score_fn.function_arn,
            "AggregateFunctionArn": functions.aggregate_fn.function_arn,
            "ChildExecutionType": "STANDARD",
            "BatchScoringEnabled": "true" if batch_on else "false",
            "BatchScoringMinItems": str(cfg.min_items),
            "BatchScoringTimeoutSeconds": str(cfg.step_timeout_seconds()),
            "BatchJobQueueArn": (
                job_queue.job_queue_arn
                if job_queue
                else stack.format_arn(service="batch", resource="job-queue", resource_name="none")
            ),
            "BatchJobDefinitionArn": (
                job_definition.job_definition_arn
                if job_definition
                else stack.format_arn(
                    service="batch", resource="job-definition", resource_name="none"
                )
            ),
        }
        missing = set(state_machines.PLACEHOLDERS) - set(values)
        if missing:  # a placeholder added to the ASL must be given a value here
            raise ValueError(f"no DefinitionSubstitutions for {sorted(missing)}")
        self.substitutions = values

        role = iam.Role(
            stack,
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
                    for f in (
                        functions.prepare_fn,
                        functions.run_case_fn,
                        functions.score_fn,
                        functions.aggregate_fn,
                    )
                ],
            )
        )
        # The Distributed Map's ItemReader reads the batches (slices of the manifest).
        storage.grant(role, read=(RUNS_PREFIX,), list_bucket=False)
        # The Distributed Map starts child executions of this very state machine.
        role.add_to_principal_policy(
            iam.PolicyStatement(
                sid="DistributedMapChildren",
                actions=["states:StartExecution"],
                resources=[arn],
            )
        )
        children = stack.format_arn(
            service="states",
            resource="execution",
            resource_name=f"{name}/*",
            arn_format=cdk.ArnFormat.COLON_RESOURCE_NAME,
        )
        role.add_to_principal_policy(
            iam.PolicyStatement(
                sid="DistributedMapChildExecutions",
                actions=["states:DescribeExecution", "states:StopExecution"],
                resources=[children],
            )
        )
        acknowledge(
            role,
            "AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:states:<AWS::Region>:"
            f"<AWS::AccountId>:execution:{name}/*]",
            "The Distributed Map's child executions are named by Step Functions at run time; "
            "the wildcard covers only this state machine's executions.",
        )
        if batch_on:
            assert job_queue is not None and job_definition is not None
            role.add_to_principal_policy(
                iam.PolicyStatement(
                    sid="SubmitGpuScoringJob",
                    actions=["batch:SubmitJob"],
                    resources=[
                        job_queue.job_queue_arn,
                        job_definition.job_definition_arn,
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
                        stack.format_arn(
                            service="events",
                            resource="rule",
                            resource_name="StepFunctionsGetEventsForBatchJobsRule",
                        )
                    ],
                )
            )
        log_group = logs.LogGroup(
            stack,
            "StateMachineLogs",
            log_group_name=f"/aws/vendedlogs/states/{name}",
            retention=retention(config.log_retention_days),
            removal_policy=removal,
        )
        self.state_machine = sfn.StateMachine(
            stack,
            "TestRunner",
            state_machine_name=name,
            state_machine_type=sfn.StateMachineType.STANDARD,
            definition_body=sfn.DefinitionBody.from_string(state_machines.test_runner_asl()),
            definition_substitutions=values,
            role=role,
            tracing_enabled=True,
            logs=sfn.LogOptions(
                destination=log_group, level=sfn.LogLevel.ALL, include_execution_data=False
            ),
        )
        redundant_role_dependency_is_intended(self.state_machine)
        acknowledge(
            role,
            "AwsSolutions-IAM5[Resource::*]",
            "CloudWatch Logs delivery (logs:CreateLogDelivery, ...), X-Ray, and Batch's "
            "DescribeJobs/TerminateJob (which .sync needs) do not support resource-level "
            "permissions.",
        )
