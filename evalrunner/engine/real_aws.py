"""Reaching a real AWS target from inside the embedded engine.

moto answers every botocore request made while the engine runs (that is how the embedded S3
and Step Functions work). A Bedrock agent, a deployed Lambda or a state machine under test must
still be called for real, with the user's own credentials. So the target gets a session whose
credentials were resolved *before* the mock replaced them, and from which moto's request hook
has been removed: its clients talk to AWS, everything else stays embedded.
"""

from __future__ import annotations

from typing import Any

import boto3

from evalrunner.engine.moto_compat import detach_request_hook
from evalrunner.targets.lambda_function import function_name
from evalrunner.targets.registry import available


def needs_real_aws(target: dict[str, Any], local_functions: set[str]) -> bool:
    """True for AWS targets (those declaring ``calls_aws``), except a Lambda that the engine
    itself hosts (the demo)."""
    if "lambdaArn" in target:
        return function_name(str(target["lambdaArn"])) not in local_functions
    return any(kind in target for kind, cls in available().items() if cls.calls_aws)


def real_session(base: boto3.Session | None = None) -> boto3.Session:
    """A session pinned to the credentials in force now (call it before entering the mock)."""
    base = base or boto3.Session()
    credentials = base.get_credentials()
    frozen = credentials.get_frozen_credentials() if credentials is not None else None
    session = boto3.Session(
        aws_access_key_id=frozen.access_key if frozen else None,
        aws_secret_access_key=frozen.secret_key if frozen else None,
        aws_session_token=frozen.token if frozen else None,
        region_name=base.region_name,
    )
    unmock(session)
    return session


def unmock(session: boto3.Session) -> boto3.Session:
    """Remove moto's request interception from clients this session creates."""
    detach_request_hook(session)
    return session
