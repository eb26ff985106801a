"""The embedded AWS's control plane, reached without botocore: deploy, start and follow a run.

A local run deployed its bucket, role, functions and state machine, started the execution
and polled it through boto3 clients against moto. In a fresh process each service's first
call loads its botocore model and endpoint rules, and moto compiles that service's URL table
to route the request back to its backend: about 0.4 s of CPU per run started from the CLI
(issue 18), for a dozen calls whose only effect is an object in one of moto's backends.
These functions make the backend calls moto's response classes make for the parameters the
engine passes, and answer what boto3 would (the same keys, the same values), so the rest of
the engine cannot tell. Anything else still goes through boto3 against the mock.

By hand because moto has no client-shaped API over its backends. Written for moto 5.2.5 and
pinned with the other seams by ``tests/unit/engine/test_moto_compat.py``.
"""

from __future__ import annotations

import base64
import json
import uuid
from typing import Any

from moto.awslambda.utils import get_backend as lambda_backend
from moto.iam.models import iam_backends
from moto.s3.models import s3_backends
from moto.stepfunctions.responses import get_backend as stepfunctions_backend

PARTITION = "aws"

#: The execution statuses after which describe_execution carries a stop date.
_STOPPED = frozenset({"SUCCEEDED", "FAILED", "ABORTED"})


def create_bucket(name: str, *, account: str, region: str) -> None:
    """What CreateBucket without a location constraint does in ``region``."""
    s3_backends[account][PARTITION].create_bucket(name, region)


def create_role(name: str, *, account: str, assume_role_policy: str) -> str:
    """The ARN of a new IAM role (Lambda's CreateFunction checks its role exists)."""
    role = iam_backends[account][PARTITION].create_role(
        role_name=name,
        assume_role_policy_document=assume_role_policy,
        path="/",
        permissions_boundary=None,
        description="",
        tags=[],
        max_session_duration=None,
    )
    return str(role.arn)


def create_function(spec: dict[str, Any], *, account: str, region: str) -> str:
    """CreateFunction with ``spec`` as boto3 takes it (``Code.ZipFile`` as bytes); the
    function's ARN. The backend is the one moto's Lambda responses pick (the Docker-free
    one inside the engine's mock)."""
    code = dict(spec.get("Code", {}))
    if isinstance(code.get("ZipFile"), bytes | bytearray):
        # on the wire (and so to the backend) a blob is base64 text
        code["ZipFile"] = base64.b64encode(code["ZipFile"]).decode("ascii")
    function = lambda_backend(account, region).create_function({**spec, "Code": code})
    return str(function.function_arn)


class InProcessStepFunctions:
    """The three Step Functions calls a local run makes, shaped as boto3's client takes and
    answers them (keyword names, response keys), against moto's interpreter backend."""

    def __init__(self, *, account: str, region: str) -> None:
        self._account, self._region = account, region

    def _backend(self) -> Any:
        return stepfunctions_backend(self._account, self._region)

    def create_state_machine(self, *, name: str, definition: str, roleArn: str) -> dict[str, Any]:
        """A STANDARD machine, its definition parsed and validated as moto does."""
        machine = self._backend().create_state_machine(
            name=name,
            definition=definition,
            roleArn=roleArn,
            tags=None,
            publish=None,
            loggingConfiguration=None,
            tracingConfiguration=None,
            encryptionConfiguration=None,
            version_description=None,
            sm_type=None,
        )
        return {"stateMachineArn": machine.arn, "creationDate": machine.creation_date}

    def start_execution(
        self, *, stateMachineArn: str, input: str, name: str | None = None
    ) -> dict[str, Any]:
        """Without a name, named with a UUID, as Step Functions names an execution started
        without one (moto would name it ``None``, and a second such start would fail)."""
        execution = self._backend().start_execution(
            stateMachineArn, name or str(uuid.uuid4()), input
        )
        return {"executionArn": execution.execution_arn, "startDate": execution.start_date}

    def describe_execution(self, *, executionArn: str) -> dict[str, Any]:
        """``status`` a plain string; ``output`` (JSON text) once SUCCEEDED and stored (moto
        sets the status a moment before the output); ``error`` and ``cause`` when set."""
        execution = self._backend().describe_execution(executionArn)
        status = str(getattr(execution.status, "value", execution.status))
        response: dict[str, Any] = {
            "executionArn": executionArn,
            "input": execution.execution_input,
            "name": execution.name,
            "startDate": execution.start_date,
            "stateMachineArn": execution.state_machine_arn,
            "status": status,
        }
        if status in _STOPPED:
            response["stopDate"] = execution.stop_date
        if status == "SUCCEEDED" and execution.output is not None:
            output = execution.output
            response["output"] = output if isinstance(output, str) else json.dumps(output)
        if execution.error is not None:
            response["error"] = execution.error
        if execution.cause is not None:
            response["cause"] = execution.cause
        return response
