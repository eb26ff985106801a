"""The evalrunner stack: one bucket, five Lambda functions, the state machine from
``state_machines/test_runner.asl.json``, GPU scoring on AWS Batch, the upload trigger, the
scheduled runs, and the SNS topic, alarms and dashboard that tell people about them. Each is
built by a module of :mod:`infra.parts`; this module composes them and states the outputs.

Everything the deployment may decide comes from :class:`infra.config.RunnerConfig`. Every
cdk-nag finding that is not fixed is acknowledged next to the resource it concerns, with the
reason (:func:`infra.parts.common.acknowledge`).

Synthesis needs neither AWS credentials, Docker nor a network: the stack is
environment-agnostic, the Lambda code is an asset of the repository itself, its dependencies
a layer built beforehand by ``make lambda-package``, and the GPU image a Docker image asset
that ``cdk synth`` only stages (``cdk deploy`` builds it).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import aws_cdk as cdk
from aws_cdk import CfnOutput, RemovalPolicy, Stack
from constructs import Construct

from infra.config import RunnerConfig
from infra.parts.bucket import RunnerBucket
from infra.parts.common import REPO_ROOT
from infra.parts.functions import PipelineFunctions
from infra.parts.gpu_batch import GpuBatch
from infra.parts.monitoring import ProductionMonitor
from infra.parts.observability import RunsTopic, Watching
from infra.parts.state_machine import RunnerStateMachine
from infra.parts.triggers import schedules, upload_trigger
from infra.parts.workflow import WorkflowStateMachine

__all__ = ["REPO_ROOT", "RunnerStack"]


class RunnerStack(Stack):
    """One evalrunner deployment. ``lambda_dependencies`` is the directory built by
    ``make lambda-package`` (checked by the app, see ``infra/app.py``).

    The parts build their resources in this stack's own scope (they are not constructs), so
    the logical IDs are those of one flat stack; the order below is the order of creation."""

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

        self.storage = RunnerBucket(self, config=config, removal=self.removal)
        self.access_logs = self.storage.access_logs
        self.bucket = self.storage.bucket
        self.bucket_id = self.storage.bucket_id

        runs_topic = RunsTopic(self, config=config, removal=self.removal)
        self.topic_key = runs_topic.topic_key
        self.topic = runs_topic.topic

        # Named and addressed before it exists: the upload function starts it.
        self.state_machine_name = f"{self.stack_name}-test-runner"[:80]
        self.state_machine_arn = self.format_arn(
            service="states",
            resource="stateMachine",
            resource_name=self.state_machine_name,
            arn_format=cdk.ArnFormat.COLON_RESOURCE_NAME,
        )
        self.functions = PipelineFunctions(
            self,
            config=config,
            removal=self.removal,
            storage=self.storage,
            topic=self.topic,
            state_machine_arn=self.state_machine_arn,
            dependencies=lambda_dependencies,
        )
        self.prepare_fn = self.functions.prepare_fn
        self.run_case_fn = self.functions.run_case_fn
        self.score_fn = self.functions.score_fn
        self.aggregate_fn = self.functions.aggregate_fn
        self.upload_fn = self.functions.upload_fn
        self.runner_role = self.functions.runner_role

        self.gpu = (
            GpuBatch(self, config=config, removal=self.removal, storage=self.storage)
            if config.batch_scoring.enabled
            else None
        )
        self.job_queue = self.gpu.job_queue if self.gpu else None
        self.job_definition = self.gpu.job_definition if self.gpu else None

        runner = RunnerStateMachine(
            self,
            config=config,
            removal=self.removal,
            storage=self.storage,
            functions=self.functions,
            gpu=self.gpu,
            name=self.state_machine_name,
            arn=self.state_machine_arn,
        )
        self.substitutions = runner.substitutions
        self.state_machine = runner.state_machine

        self.workflow = WorkflowStateMachine(
            self,
            config=config,
            removal=self.removal,
            storage=self.storage,
            functions=self.functions,
            topic=self.topic,
            run_name=self.state_machine_name,
            run_arn=self.state_machine_arn,
        )

        self.upload_rule = upload_trigger(self, bucket=self.bucket, upload_fn=self.upload_fn)
        self.schedules = schedules(
            self,
            config=config,
            state_machine=self.state_machine,
            state_machine_arn=self.state_machine_arn,
        )
        self.monitor = (
            ProductionMonitor(
                self,
                config=config.monitor,
                functions=self.functions,
                storage=self.storage,
                state_machine_arn=self.state_machine_arn,
                topic=self.topic,
                state_machine_name=self.state_machine_name,
            )
            if config.monitor is not None
            else None
        )
        monitor_fns = (self.monitor.function,) if self.monitor else ()
        watching = Watching(
            self,
            topic=self.topic,
            state_machine=self.state_machine,
            state_machine_name=self.state_machine_name,
            bucket=self.bucket,
            upload_fn=self.upload_fn,
            functions=(
                self.prepare_fn,
                self.run_case_fn,
                self.score_fn,
                self.aggregate_fn,
                self.upload_fn,
                *monitor_fns,
            ),
        )
        self.alarms = [*watching.alarms, self.workflow.alarm]
        self.dashboard = watching.dashboard
        if self.monitor is not None:
            self.dashboard.add_widgets(*self.monitor.widgets())
        self._outputs()

    def _outputs(self) -> None:
        outputs = {
            "BucketName": (self.bucket.bucket_name, "the runner bucket (--bucket)"),
            "StateMachineArn": (
                self.state_machine.state_machine_arn,
                "the test-runner state machine (--state-machine-arn)",
            ),
            "WorkflowStateMachineArn": (
                self.workflow.state_machine.state_machine_arn,
                "the workflow state machine: start it with a workflow event",
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
        if self.monitor is not None:
            outputs["MonitorFunctionName"] = (
                self.monitor.function.function_name,
                "the scheduled monitor of production traffic (invoke it to run now)",
            )
        if self.job_queue is not None:
            outputs["GpuJobQueueArn"] = (self.job_queue.job_queue_arn, "the GPU scoring queue")
        for name, (value, description) in outputs.items():
            CfnOutput(self, name, value=value, description=f"evalrunner: {description}")
