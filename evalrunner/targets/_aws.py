"""boto3 clients for the AWS targets, and the translation of botocore errors into user terms.

Retries for throttling and 5xx are left to botocore's ``standard`` mode (it already knows which
errors are transient and honours the retry quota); evalrunner only sets how many attempts and
how long to wait, from the target spec, so every AWS target behaves the same. Why botocore and
not :class:`evalrunner.retry.RetryPolicy` drives these calls: see :mod:`evalrunner.retry`.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import boto3
import urllib3.exceptions
from botocore.config import Config
from botocore.exceptions import (
    BotoCoreError,
    ClientError,
    ConnectTimeoutError,
    EndpointConnectionError,
    NoCredentialsError,
    NoRegionError,
    ReadTimeoutError,
)

from evalrunner.errors import ConfigError, TargetError, TargetTimeout
from evalrunner.http_client import describe_failure
from evalrunner.retry import AWS_THROTTLING_CODES
from evalrunner.targets.spec import TargetSpec

_ARN = re.compile(
    r"^arn:(?P<partition>aws[a-zA-Z-]*):(?P<service>[a-z0-9-]+):(?P<region>[a-z0-9-]*):"
)

#: Enough pooled connections for the local engine's concurrency; botocore's default of 10
#: would make concurrent cases queue for a connection and inflate their measured latency.
MAX_POOL_CONNECTIONS = 50

_NOT_FOUND = {
    "ResourceNotFoundException",
    "StateMachineDoesNotExist",
    "ExecutionDoesNotExist",
    "NotFoundException",
}


def region_from_arn(arn: str | None) -> str | None:
    match = _ARN.match(arn or "")
    return (match.group("region") or None) if match else None


def client_config(options: TargetSpec, *, read_timeout: float | None = None) -> Config:
    """Timeouts and retry budget from the target spec (timeout_seconds, max_retries).

    botocore's timeouts are per socket operation and its retries have no overall budget.
    AWS APIs answer at once when their work is done, so a read timeout of timeout_seconds
    bounds the wait; an explicit ``total_timeout_seconds`` also caps the attempts at as many
    whole timeouts as fit in it (botocore's backoff sleeps, at most 20 s each, are not
    counted). Without it, max_retries decides alone, as before.
    """
    timeout = options.timeout_seconds
    attempts = options.max_retries + 1
    if options.total_timeout_seconds is not None:
        attempts = max(1, min(attempts, int(options.total_timeout_seconds // timeout)))
    return Config(
        connect_timeout=timeout,
        read_timeout=read_timeout if read_timeout is not None else timeout,
        # total_max_attempts counts the first call; botocore's "max_attempts" would not.
        retries={"total_max_attempts": attempts, "mode": "standard"},
        max_pool_connections=MAX_POOL_CONNECTIONS,
        user_agent_extra="evalrunner",
    )


def make_client(
    service: str,
    options: TargetSpec,
    *,
    session: boto3.Session | None = None,
    arn: str | None = None,
    read_timeout: float | None = None,
) -> Any:
    """A client in the target's region: the ARN's region, else ``region``, else the default.

    The ARN wins because calling a resource in another region than its ARN names can only
    fail; ``region`` exists for ids that carry none (agent, knowledge base, function name).
    """
    session = session or boto3.Session()
    region = region_from_arn(arn) or options.region or session.region_name
    if not region:
        raise ConfigError(
            f'No AWS region for the {service} target: set "region" in the event\'s target '
            '(e.g. "us-east-1") or AWS_REGION / AWS_DEFAULT_REGION in the environment.'
        )
    try:
        return session.client(
            service, region_name=region, config=client_config(options, read_timeout=read_timeout)
        )
    except NoRegionError as exc:  # pragma: no cover - region is always passed above
        raise ConfigError(str(exc)) from exc


def error_code(exc: ClientError) -> str:
    return str(exc.response.get("Error", {}).get("Code", ""))


def client_error_to_target_error(
    exc: ClientError, what: str, region: str | None, permission: str | None = None
) -> TargetError:
    """Name the failing call in words that say what to change.

    ``permission`` ("bedrock:InvokeAgent on arn:...") is what an AccessDenied asks for.
    """
    code = error_code(exc)
    message = exc.response.get("Error", {}).get("Message", "") or str(exc)
    status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
    if code in AWS_THROTTLING_CODES or status == 429:
        return TargetError(
            f"{what} was throttled ({code}: {message}) even after retries. Lower the run's "
            "max_concurrency, raise target.max_retries, or ask for a higher service quota.",
            retryable=True,
        )
    if code.startswith("AccessDenied") or code in {"UnauthorizedOperation", "Forbidden"}:
        return TargetError(
            f"{what} was refused ({code}): {message}. Grant the IAM role that runs evalrunner "
            + (permission if permission else "permission for this call on the target")
            + "."
        )
    if code in _NOT_FOUND:
        return TargetError(
            f"{what} failed: not found ({code}: {message}). Check the target's id or ARN and "
            f"that it exists in region {region or '(default)'}."
        )
    if code in {"ValidationException", "InvalidArn", "InvalidParameterValueException"}:
        return TargetError(f"{what} was rejected as invalid ({code}): {message}")
    retryable = isinstance(status, int) and status >= 500
    return TargetError(f"{what} failed ({code or status}): {message}", retryable=retryable)


@contextmanager
def aws_errors(
    what: str, *, timeout: float, region: str | None, permission: str | None = None
) -> Iterator[None]:
    """Turn botocore exceptions raised inside the block into TargetError / TargetTimeout."""
    try:
        yield
    except TargetError:
        raise
    except ClientError as exc:
        raise client_error_to_target_error(exc, what, region, permission) from exc
    except (ReadTimeoutError, ConnectTimeoutError, urllib3.exceptions.ReadTimeoutError) as exc:
        # urllib3's own error escapes botocore while an event stream is being read.
        raise TargetTimeout(
            f"{what} did not answer within timeout_seconds={timeout:g} (after retries). "
            "Raise target.timeout_seconds if the target is just slow.",
            retryable=True,
        ) from exc
    except EndpointConnectionError as exc:
        raise TargetError(
            f"{what}: could not connect to {exc.kwargs.get('endpoint_url', 'the endpoint')}. "
            "Check the region and network access.",
            retryable=True,
        ) from exc
    except urllib3.exceptions.ProtocolError as exc:
        raise TargetError(
            f"{what}: the connection broke mid-response ({describe_failure(exc)}).",
            retryable=True,
        ) from exc
    except NoCredentialsError as exc:
        raise TargetError(
            f"{what}: no AWS credentials found. Configure credentials (AWS_PROFILE, "
            "environment variables or an instance/task role) for the account of the target."
        ) from exc
    except BotoCoreError as exc:
        raise TargetError(f"{what} failed: {exc}") from exc
