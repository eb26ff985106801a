"""The workflow state machine (``state_machines/workflow.asl.json``), its function
(``lambdas/workflow.py``) and their roles: a workflow started by one event runs generate,
the run steps (each a run of the test-runner state machine, started and followed by the
function) and the artifacts, its state under ``workflows/`` in the runner bucket.

Least privilege: the function reads the workflow's inputs (``workflow-inputs/``), its own
state (``workflows/``), the runs' reports (``test-reports/``) and the judge cache; writes its
state, the runs' suites (``test-suites/_workflow/``, whose uploads start no run) and the judge
cache; starts the test runner and describes that machine's executions only. The state
machine invokes that one function."""

from __future__ import annotations

import aws_cdk as cdk
from aws_cdk import Duration, RemovalPolicy, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_sns as sns
from aws_cdk import aws_stepfunctions as sfn

import state_machines
from evalrunner.event_rules import WORKFLOW_SUITE_PREFIX
from evalrunner.judge.cache import BUCKET_PREFIX as JUDGE_CACHE_PREFIX
from evalrunner.storage import REPORTS_PREFIX
from evalrunner.workflow.event import INPUTS_PREFIX, SCRATCH_MIB, WORKFLOWS_PREFIX
from infra.config import RunnerConfig
from infra.parts.bucket import RunnerBucket
from infra.parts.common import (
    acknowledge,
    redundant_role_dependency_is_intended,
    retention,
    role_of,
)
from infra.parts.functions import PipelineFunctions
from infra.parts.observability import executions_failed_alarm

#: The function's environment variable naming the test runner (lambdas/workflow.py).
ENV_RUN_STATE_MACHINE = "EVALRUNNER_STATE_MACHINE_ARN"


class WorkflowStateMachine:
    """Builds the workflow's function and state machine in ``stack``'s scope; the run steps
    start the test runner ``run_name`` (ARN ``run_arn``); a failed workflow alarms on
    ``topic``, as a failed run does."""

    def __init__(
        self,
        stack: Stack,
        *,
        config: RunnerConfig,
        removal: RemovalPolicy,
        storage: RunnerBucket,
        functions: PipelineFunctions,
        topic: sns.ITopic,
        run_name: str,
        run_arn: str,
    ) -> None:
        self.function: lambda_.Function = functions.function(
            "Workflow",
            "lambdas.workflow.handler",
            "One step of a workflow: generate, write the attacks, start and follow a run, "
            "calibrate, weak spots, artifacts, the report.",
            memory=2048,
            timeout=Duration.minutes(15),
            env={"EVALRUNNER_BUCKET": storage.bucket.bucket_name, ENV_RUN_STATE_MACHINE: run_arn},
            # each task copies the workflow's prefix (every run's report set) into /tmp:
            # sized for what a workflow holds (SCRATCH_MIB in evalrunner/workflow/event.py says
            # why); a task that would copy more than half is refused before copying
            storage_mib=SCRATCH_MIB,
        )
        role = role_of(self.function)
        functions.grant_judge(role)  # the judge writes the suite, the attacks, the artifacts
        storage.grant(
            role,
            read=(INPUTS_PREFIX, WORKFLOWS_PREFIX, REPORTS_PREFIX, JUDGE_CACHE_PREFIX),
            write=(WORKFLOWS_PREFIX, WORKFLOW_SUITE_PREFIX, JUDGE_CACHE_PREFIX),
        )
        role.add_to_principal_policy(
            iam.PolicyStatement(
                sid="StartRuns", actions=["states:StartExecution"], resources=[run_arn]
            )
        )
        runs = stack.format_arn(
            service="states",
            resource="execution",
            resource_name=f"{run_name}:*",
            arn_format=cdk.ArnFormat.COLON_RESOURCE_NAME,
        )
        role.add_to_principal_policy(
            iam.PolicyStatement(
                sid="FollowRuns", actions=["states:DescribeExecution"], resources=[runs]
            )
        )
        acknowledge(
            role,
            f"AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:states:<AWS::Region>:"
            f"<AWS::AccountId>:execution:{run_name}:*]",
            "The workflow follows the runs it starts, whose execution names are made per "
            "run; the wildcard covers only the test runner's executions.",
        )
        # Begin refuses a second execution of a workflow_id while the one holding it runs.
        self.name = f"{stack.stack_name}-workflow"[:80]
        own = stack.format_arn(
            service="states",
            resource="execution",
            resource_name=f"{self.name}:*",
            arn_format=cdk.ArnFormat.COLON_RESOURCE_NAME,
        )
        role.add_to_principal_policy(
            iam.PolicyStatement(
                sid="OneExecutionPerWorkflow",
                actions=["states:DescribeExecution"],
                resources=[own],
            )
        )
        acknowledge(
            role,
            f"AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:states:<AWS::Region>:"
            f"<AWS::AccountId>:execution:{self.name}:*]",
            "Begin checks whether the execution holding a workflow still runs; execution "
            "names are the caller's; the wildcard covers only the workflow's executions.",
        )
        machine_role = iam.Role(
            stack,
            "WorkflowStateMachineRole",
            assumed_by=iam.ServicePrincipal("states.amazonaws.com"),
            description="evalrunner workflow state machine",
        )
        machine_role.add_to_principal_policy(
            iam.PolicyStatement(
                sid="InvokeWorkflowFunction",
                actions=["lambda:InvokeFunction"],
                resources=[self.function.function_arn],
            )
        )
        log_group = logs.LogGroup(
            stack,
            "WorkflowStateMachineLogs",
            log_group_name=f"/aws/vendedlogs/states/{self.name}",
            retention=retention(config.log_retention_days),
            removal_policy=removal,
        )
        self.substitutions = {"WorkflowFunctionArn": self.function.function_arn}
        self.state_machine = sfn.StateMachine(
            stack,
            "WorkflowStateMachine",
            state_machine_name=self.name,
            state_machine_type=sfn.StateMachineType.STANDARD,
            definition_body=sfn.DefinitionBody.from_string(state_machines.workflow_asl()),
            definition_substitutions=self.substitutions,
            role=machine_role,
            tracing_enabled=True,
            logs=sfn.LogOptions(
                destination=log_group, level=sfn.LogLevel.ALL, include_execution_data=False
            ),
        )
        redundant_role_dependency_is_intended(self.state_machine)
        acknowledge(
            machine_role,
            "AwsSolutions-IAM5[Resource::*]",
            "CloudWatch Logs delivery (logs:CreateLogDelivery, ...) and X-Ray do not support "
            "resource-level permissions.",
        )
        self.alarm = executions_failed_alarm(
            stack,
            "WorkflowsFailedAlarm",
            self.state_machine,
            topic,
            label="Failed workflows",
            description="evalrunner: a workflow (workflow state machine execution) "
            "failed, timed out or was aborted: its workflow-report.html under "
            "workflows/<workflow_id>/ says which step and why; start it again to resume there.",
        )
