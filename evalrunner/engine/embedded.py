"""The embedded AWS a local run uses: its account, region and bucket, clients on its S3 and
Step Functions (in-process with the speed seams on, boto3 through moto's HTTP layer off),
and the bits moto wants of a Lambda (a context, a placeholder deployment package)."""

from __future__ import annotations

import io
import threading
import zipfile
from typing import Any

import boto3

from evalrunner.engine.dispatch import LambdaContext
from evalrunner.engine.moto_compat import InProcessS3Client
from evalrunner.engine.moto_services import InProcessStepFunctions

REGION = "us-east-1"
ACCOUNT = "123456789012"
BUCKET = "evalrunner-local"


def embedded_s3(*, fast: bool = True) -> Any:
    """An S3 client on the embedded bucket (inside the run's mock). ``fast`` (the speed
    seams): the engine's own puts and gets take no trip through botocore
    (:class:`InProcessS3Client`; anything else falls back to boto3); else a boto3 client."""
    if not fast:
        return _LateClient("s3")
    return InProcessS3Client(lambda: boto3.client("s3", region_name=REGION), account_id=ACCOUNT)


class _LateClient:
    """A boto3 client made at its first call: a client takes its credentials when it is
    made, and the run's storage is made before the run's mock (and its credentials) starts."""

    def __init__(self, service: str) -> None:
        self._service = service
        self._client: Any = None
        self._lock = threading.Lock()

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):  # not ours to forward (and no recursion before __init__)
            raise AttributeError(name)
        with self._lock:
            if self._client is None:
                self._client = boto3.client(self._service, region_name=REGION)
        return getattr(self._client, name)


def embedded_stepfunctions(*, fast: bool = True) -> Any:
    """The embedded Step Functions (inside the run's mock): a boto3-shaped client on moto's
    backend (``fast``, the speed seams), or a boto3 client."""
    if not fast:
        return boto3.client("stepfunctions", region_name=REGION)
    return InProcessStepFunctions(account=ACCOUNT, region=REGION)


def lambda_context(name: str) -> LambdaContext:
    return LambdaContext(
        function_name=name,
        invoked_function_arn=f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:{name}",
    )


def placeholder_zip() -> bytes:
    # moto wants a deployment package; the code that really runs is the dispatched handler.
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("index.py", "def handler(event, context):\n    return event\n")
    return buf.getvalue()
