"""The workflow state machine's function (``state_machines/workflow.asl.json``): begin (check
and store the workflow event), step (run one step, or start a run step's run), check (look
at that run; record it when it ends), report (write the workflow report). Each action is
:class:`evalrunner.workflow.deployed.Deployed`'s; a bad event fails the execution at Begin,
naming the field."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any, Literal

import boto3
from pydantic import BaseModel, ConfigDict

from evalrunner.judge.base import Judge
from evalrunner.judge.config import JudgeConfig
from evalrunner.pipeline.context import Runtime
from evalrunner.workflow.config import Step
from evalrunner.workflow.deployed import Deployed
from lambdas._common import RUNTIME, Handler, collector_frozen, logger, store_for

#: The run state machine the run steps start (the stack sets it).
ENV_RUN_STATE_MACHINE = "EVALRUNNER_STATE_MACHINE_ARN"


class WorkflowTask(BaseModel):
    """One task's input, as the workflow definition passes it."""

    model_config = ConfigDict(extra="forbid")

    action: Literal["begin", "step", "check", "report"]
    #: begin: the workflow event as the execution was started with it.
    event: Any = None
    workflow_id: str | None = None
    step: Step | None = None
    #: report after a failure: the caught error ({"Error", "Cause"}).
    error: Any = None
    #: begin: this workflow execution; check: the run the step started.
    execution: str | None = None
    wait_seconds: int = 0


def build(runtime: Runtime, *, sfn: Any = None, run_machine: str | None = None) -> Handler:
    """The handler over ``runtime`` (its bucket, its judge factory, which caches judge
    replies in the bucket), starting runs of ``run_machine`` through ``sfn`` (defaults: the
    function's environment and a boto3 client)."""

    def deployed() -> Deployed:
        store = store_for(None, runtime)

        def writer(raw: Mapping[str, Any]) -> Judge:
            return runtime.judge_for(JudgeConfig.model_validate(dict(raw)), store)

        return Deployed(
            store=store,
            sfn=sfn if sfn is not None else boto3.client("stepfunctions"),
            run_machine=run_machine or os.environ.get(ENV_RUN_STATE_MACHINE, ""),
            writer=writer,
        )

    @logger.inject_lambda_context
    def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        task = WorkflowTask.model_validate(event)
        work = deployed()
        if task.action == "begin":
            return work.begin(task.event, task.execution)
        workflow_id = str(task.workflow_id)
        if task.action == "report":
            return work.report(workflow_id, task.error)
        if task.step is None:
            raise ValueError(f"{task.action}: no step given")
        # check: the run the step started and the wait, so that while it runs the check is
        # one describe call (not a copy of the whole workflow folder every wait_seconds)
        result = (
            work.step(workflow_id, task.step)
            if task.action == "step"
            else work.check(workflow_id, task.step, task.execution, task.wait_seconds)
        )
        logger.info("workflow step", extra=result)
        return result

    return handler


handler = collector_frozen(build(RUNTIME))
