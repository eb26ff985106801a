"""A Step Functions state machine as the system under test (``"stepFunctionArn"``).

EXPRESS machines answer synchronously (StartSyncExecution); STANDARD ones cannot, so their
execution is started and polled until it ends or ``timeout_seconds`` runs out. The type is
asked once and cached, because users point evalrunner at either kind and should not need to
say which.
"""

from __future__ import annotations

import contextlib
import json
import re
import threading
import time
import uuid
from typing import Any, ClassVar

import boto3
from pydantic import Field

from evalrunner.errors import TargetError, TargetTimeout
from evalrunner.http_client import ResponseTooLarge, snippet
from evalrunner.suite.model import TestCase
from evalrunner.targets import adapters
from evalrunner.targets._aws import aws_errors, make_client, region_from_arn
from evalrunner.targets._common import (
    question_payload,
)
from evalrunner.targets.base import (
    DEPLOY_HINT,
    ConversationSession,
    IamGrant,
    Target,
    TargetResponse,
)
from evalrunner.targets.registry import register
from evalrunner.targets.spec import (
    ConversationFieldsSpec,
    ResponseMappingSpec,
    SpecModel,
    TargetSpec,
)

_RUNNING = {"RUNNING", "PENDING_REDRIVE"}
_EXECUTION_NAME_UNSAFE = re.compile(r"[^A-Za-z0-9_-]+")


def state_machine_name(arn: str) -> str:
    """``arn:aws:states:r:acct:stateMachine:NAME`` → NAME."""
    marker = ":stateMachine:"
    return arn.split(marker, 1)[1].split(":", 1)[0] if marker in arn else arn


def execution_name(case: TestCase) -> str:
    """Unique per call (names are unique for 90 days) yet findable by case id in the console."""
    prefix = _EXECUTION_NAME_UNSAFE.sub("-", case.case_id)[:40].strip("-") or "case"
    return f"evalrunner-{prefix}-{uuid.uuid4().hex[:16]}"[:80]


class StepFunctionsFields(SpecModel):
    """``{"stepFunctionArn"}``: a state machine, EXPRESS or STANDARD."""

    schema_def: ClassVar[str] = "stepFunctions"

    stepFunctionArn: str = Field(
        pattern=r"^arn:aws[a-zA-Z-]*:states:[a-z0-9-]+:\d{12}:stateMachine:[A-Za-z0-9_-]{1,80}$"
    )
    question_field: str = "question"


class StepFunctionsSpec(
    StepFunctionsFields, ConversationFieldsSpec, ResponseMappingSpec, TargetSpec
):
    """A state machine target as the event gives it."""


@register
class StepFunctionsTarget(Target):
    """Starts one execution per case with ``{"question": ..., "conversation": [...]}``."""

    kind = "stepFunctionArn"
    spec_model = StepFunctionsSpec
    options: StepFunctionsSpec
    calls_aws = True
    deploy_list = "state_machine_arns"
    iam = (
        IamGrant(
            "StartTargetStateMachines",
            ("states:StartExecution", "states:StartSyncExecution", "states:DescribeStateMachine"),
            "{arn}",
        ),
        IamGrant(
            "FollowTargetExecutions",
            ("states:DescribeExecution", "states:StopExecution"),
            "arn:{partition}:states:{region}:{account}:execution:{name}:*",
            wildcard_reason="Executions of a configured target state machine are named per "
            "run; the wildcard is limited to that state machine's executions.",
        ),
    )

    #: Polling of STANDARD executions: first wait, growth factor, ceiling (seconds). Short at
    #: first because most evaluated workflows finish in seconds; capped so a slow one costs
    #: few DescribeExecution calls.
    poll_initial_s = 0.25
    poll_factor = 1.5
    poll_max_s = 2.0

    def __init__(self, spec: dict[str, Any], *, session: boto3.Session | None = None) -> None:
        super().__init__(spec)
        self.arn = self.options.stepFunctionArn
        self.question_field = self.options.question_field
        self.timeout = self.options.timeout_seconds
        self.max_bytes = self.options.max_response_bytes
        self.mapping = adapters.ResponseMapping.from_spec(spec)
        self.client = make_client("stepfunctions", self.options, session=session, arn=self.arn)
        self.region = region_from_arn(self.arn) or self.client.meta.region_name
        self._type: str | None = None
        self._type_lock = threading.Lock()

    @classmethod
    def own_name(cls, spec: dict[str, Any]) -> str:
        return state_machine_name(str(spec["stepFunctionArn"]))

    @classmethod
    def deploy_problems(cls, spec: dict[str, Any], allowed: Any) -> list[str]:
        if spec["stepFunctionArn"] in allowed.state_machine_arns:
            return []
        return [
            f"target.stepFunctionArn {spec['stepFunctionArn']} is not in "
            f"targets.state_machine_arns; {DEPLOY_HINT}"
        ]

    @property
    def _what(self) -> str:
        return f"state machine {state_machine_name(self.arn)}"

    def machine_type(self) -> str:
        """STANDARD or EXPRESS, asked once per target and shared by all threads."""
        with self._type_lock:
            if self._type is None:
                with aws_errors(
                    f"Describing {self._what}", timeout=self.timeout, region=self.region
                ):
                    described = self.client.describe_state_machine(stateMachineArn=self.arn)
                self._type = str(described.get("type", "STANDARD"))
            return self._type

    def invoke(self, case: TestCase) -> TargetResponse:
        return self._send(case, None)

    def invoke_turn(self, case: TestCase, session: ConversationSession) -> TargetResponse:
        return self._send(case, session)

    def _send(self, case: TestCase, session: ConversationSession | None) -> TargetResponse:
        execution_input = json.dumps(
            question_payload(
                case,
                self.question_field,
                history_field=self.options.history_field,
                session=(self.options.session_id_field, session.id) if session else None,
            )
        )
        name = execution_name(case)
        if self.machine_type() == "EXPRESS":
            with aws_errors(f"Running {self._what}", timeout=self.timeout, region=self.region):
                result = self.client.start_sync_execution(
                    stateMachineArn=self.arn, name=name, input=execution_input
                )
        else:
            result = self._run_standard(name, execution_input)
        return self._finish(result)

    def _run_standard(self, name: str, execution_input: str) -> dict[str, Any]:
        deadline = time.monotonic() + self.timeout
        with aws_errors(f"Starting {self._what}", timeout=self.timeout, region=self.region):
            execution_arn = self.client.start_execution(
                stateMachineArn=self.arn, name=name, input=execution_input
            )["executionArn"]
        delay = self.poll_initial_s
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                self._stop(execution_arn)
                raise TargetTimeout(
                    f"Execution {execution_arn} of {self._what} did not finish within "
                    f"timeout_seconds={self.timeout:g}; it was stopped. Raise "
                    "target.timeout_seconds if the workflow is just slow."
                )
            time.sleep(min(delay, remaining))
            delay = min(delay * self.poll_factor, self.poll_max_s)
            with aws_errors(
                f"Polling execution {execution_arn}", timeout=self.timeout, region=self.region
            ):
                described: dict[str, Any] = self.client.describe_execution(
                    executionArn=execution_arn
                )
            if described.get("status") not in _RUNNING:
                return described

    def _stop(self, execution_arn: str) -> None:
        """Best effort: a timed-out case should not keep a workflow (and its bill) running."""
        with contextlib.suppress(Exception):  # the timeout is what the user must see
            self.client.stop_execution(
                executionArn=execution_arn,
                error="evalrunner.Timeout",
                cause=f"No result within timeout_seconds={self.timeout:g}",
            )

    def _finish(self, result: dict[str, Any]) -> TargetResponse:
        status = result.get("status")
        where = result.get("executionArn", self._what)
        if status != "SUCCEEDED":
            error = result.get("error") or "(no error name)"
            cause = snippet(result.get("cause"), 1000) or "(no cause given)"
            raise TargetError(f"Execution {where} ended {status}: {error}: {cause}")
        output = result.get("output")
        if output is None:
            raise TargetError(
                f"Execution {where} succeeded without an output it could return (outputs over "
                "256 KiB are not included). Make the workflow return a smaller result."
            )
        if len(output) > self.max_bytes // 4 and len(output.encode("utf-8")) > self.max_bytes:
            raise ResponseTooLarge(f"Execution {where}", "its output", self.max_bytes)
        return adapters.normalise(output, self.mapping, source=self._what)
