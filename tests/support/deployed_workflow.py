"""The deployed workflow, as the stack wires it, inside moto: the runner bucket, the run state
machine (``test_runner.asl.json``) and the workflow state machine (``workflow.asl.json``)
both executed by moto's Step Functions interpreter, and every Lambda task dispatched
in-process to the very handlers of ``lambdas/`` (the pipeline's four and
``lambdas/workflow.py``). Only AWS itself is stood in for (moto); the handlers, both
definitions and the library run as deployed."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import boto3

import state_machines
from evalrunner.engine.dispatch import Dispatcher, dispatching
from evalrunner.engine.embedded import ACCOUNT, BUCKET, REGION, placeholder_zip
from evalrunner.engine.local import LocalEngine
from evalrunner.pipeline.context import Runtime, Settings
from lambdas import workflow
from lambdas.local import local_pipeline

WORKFLOW_FUNCTION = "evalrunner-workflow"
FUNCTIONS = f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:"
RUN_MACHINE = f"arn:aws:states:{REGION}:{ACCOUNT}:stateMachine:evalrunner-test-runner"
WORKFLOW_MACHINE = f"arn:aws:states:{REGION}:{ACCOUNT}:stateMachine:evalrunner-workflow"


@dataclass
class Stack:
    """The deployed pieces a user reaches: the bucket and the two state machines."""

    s3: Any
    sfn: Any
    calls: dict[str, int]

    def put(self, key: str, data: bytes | str) -> None:
        body = data.encode("utf-8") if isinstance(data, str) else data
        self.s3.put_object(Bucket=BUCKET, Key=key, Body=body)

    def get(self, key: str) -> bytes:
        return bytes(self.s3.get_object(Bucket=BUCKET, Key=key)["Body"].read())

    def json(self, key: str) -> Any:
        return json.loads(self.get(key))

    def keys(self, prefix: str) -> list[str]:
        pages = self.s3.get_paginator("list_objects_v2").paginate(Bucket=BUCKET, Prefix=prefix)
        return [o["Key"] for page in pages for o in page.get("Contents", [])]

    def begin(self, event: dict[str, Any]) -> str:
        """Start the workflow state machine with ``event``; its execution ARN."""
        return str(
            self.sfn.start_execution(
                stateMachineArn=WORKFLOW_MACHINE, name=str(uuid.uuid4()), input=json.dumps(event)
            )["executionArn"]
        )

    def start(self, event: dict[str, Any], *, timeout: float = 240) -> dict[str, Any]:
        """Start the workflow state machine with ``event`` and wait for it to end."""
        arn = self.begin(event)
        found: dict[str, Any] = {}

        def ended() -> bool:
            found.update(self.sfn.describe_execution(executionArn=arn))
            return found["status"] != "RUNNING" and (
                found["status"] != "SUCCEEDED" or "output" in found
            )

        self.wait_for(ended, timeout=timeout)
        return found

    @staticmethod
    def wait_for(condition: Any, *, timeout: float = 240) -> None:
        deadline = time.monotonic() + timeout
        while not condition():
            if time.monotonic() > deadline:
                raise AssertionError("waited in vain")
            time.sleep(0.05)

    def runs(self) -> list[dict[str, Any]]:
        """The run state machine's executions (the runs the workflow started)."""
        return list(self.sfn.list_executions(stateMachineArn=RUN_MACHINE)["executions"])


@contextmanager
def deployed_stack() -> Iterator[Stack]:
    """The bucket, both state machines and their functions, for one test."""
    engine = LocalEngine(pipeline=local_pipeline, fast=False)
    runtime = Runtime(
        settings=Settings.from_env().model_copy(update={"bucket": BUCKET, "region": REGION})
    )
    calls: dict[str, int] = {}
    handlers: dict[str, Any] = {}
    dispatcher = Dispatcher(
        handlers,
        observer=lambda name, ev, result, exc: calls.__setitem__(name, calls.get(name, 0) + 1),
    )
    with engine.embedded_aws(), dispatching(dispatcher, direct=False):
        sfn = boto3.client("stepfunctions", region_name=REGION)
        dispatcher.handlers.update(engine.functions_for(runtime))
        dispatcher.handlers[WORKFLOW_FUNCTION] = workflow.build(
            runtime, sfn=sfn, run_machine=RUN_MACHINE
        )
        engine.deploy(b"id,question\n", "test-suites/_placeholder.csv")
        role = f"arn:aws:iam::{ACCOUNT}:role/evalrunner-local"
        boto3.client("lambda", region_name=REGION).create_function(
            FunctionName=WORKFLOW_FUNCTION,
            Runtime="python3.12",
            Role=role,
            Handler="index.handler",
            Code={"ZipFile": placeholder_zip()},
            Timeout=900,
        )
        definition = state_machines.substitute(
            state_machines.workflow_asl(),
            {"WorkflowFunctionArn": f"{FUNCTIONS}{WORKFLOW_FUNCTION}"},
            state_machines.WORKFLOW_PLACEHOLDERS,
        )
        sfn.create_state_machine(name="evalrunner-workflow", definition=definition, roleArn=role)
        yield Stack(s3=boto3.client("s3", region_name=REGION), sfn=sfn, calls=calls)
