"""What every part of the stack shares: the repository root, runtime and service names, and
the helpers for cdk-nag acknowledgments, cfn-lint metadata and log retention."""

from __future__ import annotations

from pathlib import Path

import aws_cdk as cdk
from aws_cdk import Acknowledgment, Validations
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from constructs import Construct, IConstruct

from infra.config import LOG_RETENTION_DAYS

REPO_ROOT = Path(__file__).resolve().parent.parent.parent
SERVICE = "evalrunner"
#: The CloudWatch namespace of the run metrics (EMF) the dashboard charts.
METRICS_NAMESPACE = "evalrunner"
RUNTIME = lambda_.Runtime.PYTHON_3_12


def acknowledge(construct: IConstruct, rule: str, reason: str) -> None:
    """A cdk-nag finding, acknowledged on ``construct`` (and what it contains). cdk-nag v3
    reads CDK's own acknowledgments (it replaced v2's NagSuppressions with them); the
    ``AwsSolutions::`` prefix is the one the validation report asks for."""
    Validations.of(construct).acknowledge(Acknowledgment(id=f"AwsSolutions::{rule}", reason=reason))


def role_of(function: lambda_.Function) -> iam.IRole:
    """The function's execution role (CDK makes one for every function that is given none)."""
    role = function.role
    assert role is not None, f"{function.node.path} has no execution role"
    return role


def redundant_role_dependency_is_intended(construct: Construct) -> None:
    """CDK makes a function (state machine) depend on its role *and* the role's policy, so it
    is not created before it may act; cfn-lint's W3005 calls the role half redundant (a GetAtt
    already orders it). Said in the template, so any cfn-lint run agrees."""
    resource = construct.node.default_child
    assert isinstance(resource, cdk.CfnResource)
    resource.add_metadata("cfn-lint", {"config": {"ignore_checks": ["W3005"]}})


def retention(days: int) -> logs.RetentionDays:
    """The RetentionDays member for a number of days (the config checked the number)."""
    return dict(zip(LOG_RETENTION_DAYS, logs.RetentionDays, strict=False))[days]
