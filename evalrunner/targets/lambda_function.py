"""A Lambda function as the system under test (``"lambdaArn"``).

The most common failure on first use is not a bug in the function but a missing permission:
the role running evalrunner may not invoke a function in another account or with a resource
policy. AWS's message names the caller, so the error shown here is the exact policy statement
and ``aws lambda add-permission`` command that fixes it.
"""

from __future__ import annotations

import json
import re
from typing import Any, ClassVar

import boto3
from botocore.exceptions import ClientError
from pydantic import Field

from evalrunner.errors import TargetError
from evalrunner.http_client import snippet
from evalrunner.suite.model import TestCase
from evalrunner.targets import adapters
from evalrunner.targets._aws import aws_errors, error_code, make_client, region_from_arn
from evalrunner.targets._common import (
    question_payload,
    read_capped,
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

_NOT_AUTHORIZED = re.compile(
    r"User: (?P<principal>arn:\S+) is not authorized to perform: (?P<action>\S+) "
    r"on resource: (?P<resource>arn:[^\s\"]+)"
)
_ASSUMED_ROLE = re.compile(
    r"^arn:(?P<partition>[^:]+):sts::(?P<account>\d{12}):assumed-role/(?P<role>[^/]+)/.+$"
)


def function_name(lambda_arn: str) -> str:
    """``arn:aws:lambda:r:acct:function:NAME[:qualifier]`` or ``NAME[:qualifier]`` → NAME."""
    if lambda_arn.startswith("arn:"):
        parts = lambda_arn.split(":")
        return parts[6] if len(parts) > 6 else lambda_arn
    return lambda_arn.split(":", 1)[0]


def _role_arn(principal: str) -> str:
    """An STS assumed-role session ARN → the IAM role ARN a resource policy can name."""
    match = _ASSUMED_ROLE.match(principal)
    if match:
        return f"arn:{match['partition']}:iam::{match['account']}:role/{match['role']}"
    return principal


def access_denied_message(message: str, function: str, region: str | None) -> str:
    """The statement and command that grant the caller lambda:InvokeFunction on the target."""
    match = _NOT_AUTHORIZED.search(message)
    principal = _role_arn(match["principal"]) if match else "<ARN of the role running evalrunner>"
    resource = match["resource"] if match else function
    statement = {
        "Sid": "AllowEvalrunnerInvoke",
        "Effect": "Allow",
        "Principal": {"AWS": principal},
        "Action": "lambda:InvokeFunction",
        "Resource": resource,
    }
    region_flag = f" --region {region}" if region else ""
    command = (
        f"aws lambda add-permission --function-name {resource} "
        f"--statement-id evalrunner-invoke --action lambda:InvokeFunction "
        f"--principal {principal}{region_flag}"
    )
    return (
        f"Not allowed to invoke Lambda function {function}: {message}\n"
        "Add this statement to the function's resource-based policy:\n"
        f"  {json.dumps(statement)}\n"
        f"for example with:\n  {command}\n"
        f"and make sure the identity policy of {principal} allows lambda:InvokeFunction on "
        f"{resource}."
    )


class LambdaFields(SpecModel):
    """``{"lambdaArn"}``: a function, invoked synchronously."""

    schema_def: ClassVar[str] = "lambdaFunction"

    lambdaArn: str = Field(
        pattern=r"^(arn:aws[a-zA-Z-]*:lambda:[a-z0-9-]+:\d{12}:function:)?[A-Za-z0-9_-]{1,64}"
        r"(:[A-Za-z0-9$_-]+)?$",
        description="Function ARN (or, locally, a function name).",
    )
    question_field: str = "question"


class LambdaSpec(LambdaFields, ConversationFieldsSpec, ResponseMappingSpec, TargetSpec):
    """A Lambda function target as the event gives it."""


@register
class LambdaTarget(Target):
    """Invokes a function synchronously with ``{"question": ..., "conversation": [...]}``."""

    kind = "lambdaArn"
    spec_model = LambdaSpec
    options: LambdaSpec
    calls_aws = True
    deploy_list = "lambda_arns"
    iam = (IamGrant("InvokeTargetFunctions", ("lambda:InvokeFunction",), "{arn}"),)

    def __init__(
        self,
        spec: dict[str, Any],
        *,
        session: boto3.Session | None = None,
        client: Any | None = None,
    ) -> None:
        """``client``: the Lambda client to invoke through, when the caller has a better one
        than boto3's (the local engine's, for a function it hosts in-process: same answers,
        without botocore and moto's HTTP layer); default: a boto3 client from ``session``."""
        super().__init__(spec)
        self.function = self.options.lambdaArn
        self.question_field = self.options.question_field
        self.timeout = self.options.timeout_seconds
        self.max_bytes = self.options.max_response_bytes
        self.mapping = adapters.ResponseMapping.from_spec(spec)
        self.client = (
            client
            if client is not None
            else make_client("lambda", self.options, session=session, arn=self.function)
        )
        self.region = region_from_arn(self.function) or self.client.meta.region_name

    @classmethod
    def own_name(cls, spec: dict[str, Any]) -> str:
        return function_name(str(spec["lambdaArn"]))

    @classmethod
    def deploy_problems(cls, spec: dict[str, Any], allowed: Any) -> list[str]:
        arn = str(spec["lambdaArn"])
        if ":" in arn:  # an ARN, perhaps qualified (version or alias)
            ok = {arn, ":".join(arn.split(":")[:7])} & set(allowed.lambda_arns) != set()
        else:  # a bare function name: the runner's own account and region
            ok = arn in {a.split(":")[6] for a in allowed.lambda_arns}
        if ok:
            return []
        return [f"target.lambdaArn {arn} is not in targets.lambda_arns; {DEPLOY_HINT}"]

    def invoke(self, case: TestCase) -> TargetResponse:
        return self._send(case, None)

    def invoke_turn(self, case: TestCase, session: ConversationSession) -> TargetResponse:
        return self._send(case, session)

    def _send(self, case: TestCase, session: ConversationSession | None) -> TargetResponse:
        what = f"Lambda function {function_name(self.function)}"
        payload = question_payload(
            case,
            self.question_field,
            history_field=self.options.history_field,
            session=(self.options.session_id_field, session.id) if session else None,
        )
        body = json.dumps(payload).encode("utf-8")
        with aws_errors(f"Invoking {what}", timeout=self.timeout, region=self.region):
            try:
                response = self.client.invoke(
                    FunctionName=self.function,
                    InvocationType="RequestResponse",
                    Payload=body,
                )
            except ClientError as exc:
                if error_code(exc).startswith("AccessDenied"):
                    message = exc.response.get("Error", {}).get("Message", str(exc))
                    raise TargetError(
                        access_denied_message(message, self.function, self.region)
                    ) from exc
                raise
            raw = read_capped(response["Payload"], self.max_bytes, what)
        if response.get("FunctionError"):
            raise TargetError(self._function_error(response["FunctionError"], raw))
        return adapters.normalise(raw, self.mapping, source=what)

    def _function_error(self, kind: str, raw: bytes) -> str:
        function = function_name(self.function)
        try:
            details = json.loads(raw)
        except ValueError:
            details = None
        if isinstance(details, dict):
            error_type = details.get("errorType", kind)
            error_message = details.get("errorMessage", snippet(raw))
            return (
                f"Lambda function {function} raised {error_type}: {error_message} "
                f"(FunctionError={kind}; see the function's CloudWatch logs)."
            )
        return f"Lambda function {function} failed (FunctionError={kind}): {snippet(raw)}"
