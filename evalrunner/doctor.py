"""``evalrunner doctor --aws``: what an engineer checks before the first ``cdk deploy`` and the
first run, with their own credentials and read-only calls only.

Each check is one line: pass, warn, fail or skip, what was found, and for anything but a pass
the command or console step that fixes it. The account and region (STS); whether the judge
model of ``cdk.json`` is active, offered in the region and granted to the account (Bedrock
GetFoundationModel / GetFoundationModelAvailability / GetInferenceProfile; a one-token
Converse call only when asked for); the G-instance vCPU quota GPU scoring needs (Service
Quotas) and the Lambda concurrency a run takes (GetAccountSettings); whether every target
``cdk.json`` lists exists (GetFunction, DescribeStateMachine, GetAgentAlias, GetKnowledgeBase,
GetFoundationModel) and, once the stack is deployed, whether its runner role may call it
(IAM SimulatePrincipalPolicy on the stack's ``RunnerRoleArn`` output).

Nothing here is created, changed or paid for, except the one-token Converse call the user
confirms with ``--converse``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from enum import StrEnum
from pathlib import Path
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError, NoCredentialsError
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from evalrunner.errors import ConfigError

#: Service Quotas codes (EC2): the vCPUs of running G and VT instances, On-Demand and Spot.
GPU_QUOTA_ON_DEMAND = "L-DB2E81BA"
GPU_QUOTA_SPOT = "L-3819A6DF"
#: Lambda: concurrent executions of the account in the region.
LAMBDA_CONCURRENCY_QUOTA = "L-B99A9384"
#: Lambda keeps this much of the account's concurrency unreserved, for every other function.
LAMBDA_UNRESERVED_MINIMUM = 10
#: The stack's reservation for the case runner when cdk.json sets none (infra/config.py's
#: ``case_runner_reserved_concurrency`` default; ``null`` there: no reservation).
DEFAULT_RESERVED_CONCURRENCY = 50
#: vCPUs of the GPU instance types the stack offers Batch (the smallest is what one job needs).
GPU_VCPUS = {"g4dn.xlarge": 4, "g5.xlarge": 4, "g6.xlarge": 4, "g4dn.2xlarge": 8, "g5.2xlarge": 8}
#: A cross-region inference profile's geography prefix (as infra/parts/functions.py has it).
INFERENCE_PROFILE = re.compile(r"^(us|eu|apac|us-gov|ca|jp|au|global)\.")

#: (service name, region or None for the session's) -> a boto3 client.
ClientFactory = Callable[[str, str | None], Any]


class Outcome(StrEnum):
    PASS = "pass"
    WARN = "warn"
    FAIL = "fail"
    SKIP = "skip"


class Check(BaseModel):
    """One line of the report."""

    name: str
    outcome: Outcome
    detail: str
    #: The command or console step that fixes it (None for a pass).
    fix: str | None = None


# --------------------------------------------------------------------------- cdk.json


class AgentAlias(BaseModel):
    model_config = ConfigDict(extra="ignore")
    agent_id: str
    alias_id: str
    region: str | None = None


class KnowledgeBase(BaseModel):
    model_config = ConfigDict(extra="ignore")
    knowledge_base_id: str
    region: str | None = None


class Targets(BaseModel):
    model_config = ConfigDict(extra="ignore")
    lambda_arns: list[str] = Field(default_factory=list)
    state_machine_arns: list[str] = Field(default_factory=list)
    agent_aliases: list[AgentAlias] = Field(default_factory=list)
    knowledge_bases: list[KnowledgeBase] = Field(default_factory=list)
    model_arns: list[str] = Field(default_factory=list)


class BatchScoring(BaseModel):
    model_config = ConfigDict(extra="ignore")
    enabled: bool = True
    instance_types: list[str] = Field(default_factory=lambda: ["g5.xlarge", "g4dn.xlarge"])
    max_vcpus: int = 16
    spot: bool = False


class DeployConfig(BaseModel):
    """What doctor reads of ``cdk.json`` (the stack's own validation is ``infra/config.py``)."""

    stack_name: str = "Evalrunner"
    judge_model: str | None = None
    judge_region: str | None = None
    targets: Targets = Field(default_factory=Targets)
    batch_scoring: BatchScoring = Field(default_factory=BatchScoring)
    #: Concurrency the stack reserves for the case runner (None: none reserved).
    case_runner_reserved_concurrency: int | None = None


def load_deploy_config(path: Path) -> DeployConfig:
    """``cdk.json``'s stack name, judge, targets and GPU scoring settings."""
    try:
        context = json.loads(path.read_text("utf-8"))["context"]
        runner = context.get("evalrunner") or {}
        bedrock = (runner.get("judge") or {}).get("bedrock") or {}
        return DeployConfig(
            stack_name=context.get("stack_name") or "Evalrunner",
            judge_model=bedrock.get("model_id"),
            judge_region=bedrock.get("region"),
            targets=Targets.model_validate(runner.get("targets") or {}),
            batch_scoring=BatchScoring.model_validate(runner.get("batch_scoring") or {}),
            case_runner_reserved_concurrency=runner.get(
                "case_runner_reserved_concurrency", DEFAULT_RESERVED_CONCURRENCY
            ),
        )
    except FileNotFoundError:
        raise ConfigError(
            f"{path} does not exist; run doctor in the repository root or pass --cdk-json"
        ) from None
    except (json.JSONDecodeError, KeyError, TypeError, AttributeError) as exc:
        raise ConfigError(f"{path}: not a cdk.json with a 'context' object ({exc})") from None
    except ValidationError as exc:
        raise ConfigError(f"{path}: {exc.errors()[0]['loc']}: {exc.errors()[0]['msg']}") from None


# --------------------------------------------------------------------------- the checks


def _code(exc: Exception) -> str:
    if isinstance(exc, ClientError):
        return str(exc.response.get("Error", {}).get("Code", ""))
    return type(exc).__name__


def _region_of(arn: str) -> str | None:
    parts = arn.split(":")
    return (parts[3] or None) if len(parts) > 3 else None


class Doctor:
    """The checks, over ``clients`` (boto3 clients by service and region)."""

    def __init__(
        self,
        clients: ClientFactory,
        config: DeployConfig,
        *,
        region: str | None,
        converse: bool = False,
        concurrency: int = 10,
    ) -> None:
        self.clients = clients
        self.config = config
        self.region = region
        self.converse = converse
        self.concurrency = concurrency
        self.account: str | None = None

    def run(self) -> list[Check]:
        identity = self.identity()
        if identity.outcome is Outcome.FAIL:
            return [identity]
        checks = [identity, *self.judge(), self.gpu_quota(), self.lambda_concurrency()]
        checks.extend(self.targets())
        return checks

    # -- account -----------------------------------------------------------------------------
    def identity(self) -> Check:
        fix = (
            "sign in: 'aws configure sso' / 'aws sso login --profile NAME' (or 'aws configure'), "
            "then pass --profile NAME or export AWS_PROFILE; set the region with --region or "
            "AWS_REGION"
        )
        if not self.region:
            return Check(
                name="account", outcome=Outcome.FAIL, detail="no AWS region configured", fix=fix
            )
        try:
            who = self.clients("sts", None).get_caller_identity()
        except (ClientError, BotoCoreError, NoCredentialsError) as exc:
            return Check(
                name="account",
                outcome=Outcome.FAIL,
                detail=f"credentials refused or missing ({_code(exc)}: {exc})",
                fix=fix,
            )
        self.account = str(who["Account"])
        return Check(
            name="account",
            outcome=Outcome.PASS,
            detail=f"account {who['Account']} as {who['Arn']}, region {self.region}",
        )

    # -- the judge ---------------------------------------------------------------------------
    def judge(self) -> Iterator[Check]:
        model = self.config.judge_model
        if not model:
            yield Check(
                name="judge model",
                outcome=Outcome.SKIP,
                detail="cdk.json names no Bedrock judge (judge.bedrock.model_id)",
            )
            return
        region = self.config.judge_region or self.region
        bedrock = self.clients("bedrock", region)
        base = INFERENCE_PROFILE.sub("", model) if INFERENCE_PROFILE.match(model) else model
        access_fix = (
            f"Bedrock console ({region}) > Model access > request access to {base} (a "
            "third-party model's first use also needs the AWS Marketplace subscription that "
            "step makes)"
        )
        if base != model:
            try:
                profile = bedrock.get_inference_profile(inferenceProfileIdentifier=model)
            except ClientError as exc:
                yield Check(
                    name="judge model",
                    outcome=Outcome.FAIL,
                    detail=f"inference profile {model} in {region}: {_code(exc)}",
                    fix="pick a profile 'aws bedrock list-inference-profiles --region "
                    f"{region}' lists, and set judge.bedrock.model_id in cdk.json",
                )
                return
            if profile.get("status") != "ACTIVE":
                yield Check(
                    name="judge model",
                    outcome=Outcome.FAIL,
                    detail=f"inference profile {model} is {profile.get('status')}",
                    fix="pick an ACTIVE profile from 'aws bedrock list-inference-profiles'",
                )
                return
        try:
            details = bedrock.get_foundation_model(modelIdentifier=base)["modelDetails"]
        except ClientError as exc:
            yield Check(
                name="judge model",
                outcome=Outcome.FAIL,
                detail=f"{base} in {region}: {_code(exc)}",
                fix="pick a model 'aws bedrock list-foundation-models --region "
                f"{region}' lists, and set judge.bedrock.model_id in cdk.json",
            )
            return
        status = (details.get("modelLifecycle") or {}).get("status", "ACTIVE")
        if status != "ACTIVE":
            yield Check(
                name="judge model",
                outcome=Outcome.WARN,
                detail=f"{base} is {status} in Bedrock's model lifecycle: calls fail once it "
                "reaches end of life",
                fix="choose an ACTIVE Claude model ('aws bedrock list-foundation-models "
                "--by-provider anthropic') for judge.bedrock.model_id in cdk.json",
            )
        else:
            yield Check(name="judge model", outcome=Outcome.PASS, detail=f"{model} is ACTIVE")
        try:
            offer = bedrock.get_foundation_model_availability(modelId=base)
        except ClientError as exc:
            yield Check(
                name="judge model access",
                outcome=Outcome.FAIL,
                detail=f"cannot read the model's availability ({_code(exc)})",
                fix=access_fix,
            )
        else:
            missing = [
                f"{name} is {value}"
                for name, value in (
                    ("authorization", offer.get("authorizationStatus")),
                    ("entitlement", offer.get("entitlementAvailability")),
                    ("region availability", offer.get("regionAvailability")),
                    ("agreement", (offer.get("agreementAvailability") or {}).get("status")),
                )
                if value not in (None, "AUTHORIZED", "AVAILABLE")
            ]
            if missing:
                yield Check(
                    name="judge model access",
                    outcome=Outcome.FAIL,
                    detail=f"{base}: " + ", ".join(missing),
                    fix=access_fix,
                )
            else:
                yield Check(
                    name="judge model access",
                    outcome=Outcome.PASS,
                    detail=f"{base} is granted to account {self.account} in {region}",
                )
        if self.converse:
            yield self._converse(model, region, access_fix)

    def _converse(self, model: str, region: str | None, access_fix: str) -> Check:
        try:
            self.clients("bedrock-runtime", region).converse(
                modelId=model,
                messages=[{"role": "user", "content": [{"text": "Say OK."}]}],
                inferenceConfig={"maxTokens": 1},
            )
        except ClientError as exc:
            return Check(
                name="judge call",
                outcome=Outcome.FAIL,
                detail=f"a one-token Converse call to {model} failed: {_code(exc)}: {exc}",
                fix=access_fix,
            )
        return Check(
            name="judge call", outcome=Outcome.PASS, detail=f"{model} answered a Converse call"
        )

    # -- quotas ------------------------------------------------------------------------------
    def gpu_quota(self) -> Check:
        batch = self.config.batch_scoring
        if not batch.enabled:
            return Check(
                name="GPU quota",
                outcome=Outcome.SKIP,
                detail="batch_scoring is off in cdk.json: model metrics score in the Score Lambda",
            )
        code = GPU_QUOTA_SPOT if batch.spot else GPU_QUOTA_ON_DEMAND
        kind = "Spot" if batch.spot else "On-Demand"
        quotas = self.clients("service-quotas", None)
        try:
            value = float(
                quotas.get_service_quota(ServiceCode="ec2", QuotaCode=code)["Quota"]["Value"]
            )
        except ClientError as exc:
            if _code(exc) != "NoSuchResourceException":
                return Check(
                    name="GPU quota",
                    outcome=Outcome.FAIL,
                    detail=f"cannot read the EC2 quota {code} ({_code(exc)})",
                    fix="allow servicequotas:GetServiceQuota, or check Service Quotas > Amazon "
                    f"EC2 > Running {kind} G and VT instances in the console",
                )
            default = quotas.get_aws_default_service_quota(ServiceCode="ec2", QuotaCode=code)
            value = float(default["Quota"]["Value"])
        need = min((GPU_VCPUS.get(t, 4) for t in batch.instance_types), default=4)
        fix = (
            f"aws service-quotas request-service-quota-increase --service-code ec2 "
            f"--quota-code {code} --desired-value {batch.max_vcpus} --region {self.region} "
            "(or set batch_scoring.enabled to false in cdk.json, or 'scoring: cpu' in the "
            "event, to score in the Score Lambda)"
        )
        if value < need:
            return Check(
                name="GPU quota",
                outcome=Outcome.FAIL,
                detail=f"Running {kind} G and VT instances: {value:g} vCPUs; one "
                f"{batch.instance_types[0]} needs {need}: a GPU scoring job would wait RUNNABLE",
                fix=fix,
            )
        if value < batch.max_vcpus:
            return Check(
                name="GPU quota",
                outcome=Outcome.WARN,
                detail=f"Running {kind} G and VT instances: {value:g} vCPUs, below "
                f"batch_scoring.max_vcpus {batch.max_vcpus}",
                fix=fix,
            )
        return Check(
            name="GPU quota",
            outcome=Outcome.PASS,
            detail=f"Running {kind} G and VT instances: {value:g} vCPUs",
        )

    def lambda_concurrency(self) -> Check:
        try:
            limit = self.clients("lambda", None).get_account_settings()["AccountLimit"]
        except ClientError as exc:
            return Check(
                name="Lambda concurrency",
                outcome=Outcome.FAIL,
                detail=f"cannot read the account's Lambda settings ({_code(exc)})",
                fix="allow lambda:GetAccountSettings, or read Service Quotas > AWS Lambda > "
                "Concurrent executions in the console",
            )
        total = int(limit["ConcurrentExecutions"])
        free = int(limit.get("UnreservedConcurrentExecutions", total))
        reserved = self.config.case_runner_reserved_concurrency
        if reserved is not None:
            # the stack reserves this for the case runner (and caps runs to it); Lambda
            # refuses a reservation that leaves fewer than 10 for every other function
            short = total < reserved + LAMBDA_UNRESERVED_MINIMUM
            detail = (
                f"{total} concurrent executions ({free} unreserved); the stack reserves "
                f"{reserved} for the case runner (cdk.json case_runner_reserved_concurrency) "
                f"and Lambda keeps {LAMBDA_UNRESERVED_MINIMUM} for every other function"
            )
        else:
            short = free < self.concurrency + LAMBDA_UNRESERVED_MINIMUM
            detail = (
                f"{total} concurrent executions ({free} unreserved); a run at "
                f"max_concurrency {self.concurrency} takes {self.concurrency}, and Lambda "
                f"keeps {LAMBDA_UNRESERVED_MINIMUM} for every other function"
            )
        if short:
            return Check(
                name="Lambda concurrency",
                outcome=Outcome.FAIL,
                detail=detail,
                fix="aws service-quotas request-service-quota-increase --service-code lambda "
                f"--quota-code {LAMBDA_CONCURRENCY_QUOTA} --desired-value 1000 --region "
                f"{self.region} (or lower case_runner_reserved_concurrency in cdk.json / "
                "the runs' max_concurrency)",
            )
        return Check(name="Lambda concurrency", outcome=Outcome.PASS, detail=detail)

    # -- targets -----------------------------------------------------------------------------
    def runner_role(self) -> tuple[str | None, Check | None]:
        """The deployed stack's runner role ARN; a skip line when it is not deployed yet."""
        try:
            stacks = self.clients("cloudformation", None).describe_stacks(
                StackName=self.config.stack_name
            )["Stacks"]
        except ClientError as exc:
            if "does not exist" in str(exc):
                return None, Check(
                    name="runner role",
                    outcome=Outcome.SKIP,
                    detail=f"stack {self.config.stack_name} is not deployed yet: whether its "
                    "role may call the targets is checked after 'cdk deploy'",
                )
            return None, Check(
                name="runner role",
                outcome=Outcome.FAIL,
                detail=f"cannot describe stack {self.config.stack_name} ({_code(exc)})",
                fix="allow cloudformation:DescribeStacks on the stack",
            )
        outputs = {o["OutputKey"]: o["OutputValue"] for o in stacks[0].get("Outputs", [])}
        role = outputs.get("RunnerRoleArn")
        if role is None:
            return None, Check(
                name="runner role",
                outcome=Outcome.FAIL,
                detail=f"stack {self.config.stack_name} has no RunnerRoleArn output",
                fix="deploy this version of the stack: 'npx cdk deploy'",
            )
        return role, None

    def targets(self) -> Iterator[Check]:
        t = self.config.targets
        entries: list[tuple[str, Callable[[], str], str]] = []  # (label, exists -> arn, action)
        for arn in t.lambda_arns:
            entries.append((arn, self._lambda(arn), "lambda:InvokeFunction"))
        for arn in t.state_machine_arns:
            entries.append((arn, self._state_machine(arn), "states:StartExecution"))
        for alias in t.agent_aliases:
            label = f"agent {alias.agent_id} alias {alias.alias_id}"
            entries.append((label, self._agent(alias), "bedrock:InvokeAgent"))
        for kb in t.knowledge_bases:
            label = f"knowledge base {kb.knowledge_base_id}"
            entries.append((label, self._knowledge_base(kb), "bedrock:Retrieve"))
        for arn in t.model_arns:
            entries.append((arn, self._model(arn), "bedrock:InvokeModel"))
        judge = self._judge_arn()
        if judge is not None:  # whether the judge exists is the judge model check's
            entries.append(
                (f"judge {self.config.judge_model}", lambda: judge, "bedrock:InvokeModel")
            )
        if not entries:
            yield Check(
                name="targets",
                outcome=Outcome.SKIP,
                detail="cdk.json lists no targets and no Bedrock judge (only URL / "
                "OpenAI-compatible targets, or allow_all_targets)",
            )
            return
        role, skipped = self.runner_role()
        if skipped is not None:
            yield skipped
        add = (
            "add it to cdk.json 'targets' (the judge: judge.bedrock.model_id) and redeploy "
            "('npx cdk deploy')"
        )
        for label, exists, action in entries:
            try:
                arn = exists()
            except ClientError as exc:
                yield Check(
                    name="target",
                    outcome=Outcome.FAIL,
                    detail=f"{label}: {_code(exc)}",
                    fix="check the ARN / ids in cdk.json 'targets' (region and account "
                    "included) and that your credentials may describe it",
                )
                continue
            if role is None:
                yield Check(name="target", outcome=Outcome.PASS, detail=f"{label} exists")
                continue
            try:
                result = self.clients("iam", None).simulate_principal_policy(
                    PolicySourceArn=role, ActionNames=[action], ResourceArns=[arn]
                )["EvaluationResults"]
            except ClientError as exc:
                yield Check(
                    name="target",
                    outcome=Outcome.FAIL,
                    detail=f"{label} exists; cannot simulate the runner role ({_code(exc)})",
                    fix="allow iam:SimulatePrincipalPolicy on the runner role, or try it in the "
                    "IAM console's policy simulator",
                )
                continue
            decision = result[0]["EvalDecision"] if result else "implicitDeny"
            if decision == "allowed":
                yield Check(
                    name="target",
                    outcome=Outcome.PASS,
                    detail=f"{label} exists and the runner role may call {action}",
                )
            else:
                yield Check(
                    name="target",
                    outcome=Outcome.FAIL,
                    detail=f"{label} exists but the runner role may not call {action} ({decision})",
                    fix=add,
                )

    def _judge_arn(self) -> str | None:
        """The ARN the runner role invokes for the default judge (profile or model)."""
        model = self.config.judge_model
        if not model:
            return None
        region = self.config.judge_region or self.region
        if model.startswith("arn:"):
            return model
        if INFERENCE_PROFILE.match(model):
            return f"arn:aws:bedrock:{region}:{self.account}:inference-profile/{model}"
        return f"arn:aws:bedrock:{region}::foundation-model/{model}"

    def _lambda(self, arn: str) -> Callable[[], str]:
        def exists() -> str:
            self.clients("lambda", _region_of(arn)).get_function(FunctionName=arn)
            return arn

        return exists

    def _state_machine(self, arn: str) -> Callable[[], str]:
        def exists() -> str:
            self.clients("stepfunctions", _region_of(arn)).describe_state_machine(
                stateMachineArn=arn
            )
            return arn

        return exists

    def _agent(self, alias: AgentAlias) -> Callable[[], str]:
        def exists() -> str:
            found = self.clients("bedrock-agent", alias.region).get_agent_alias(
                agentId=alias.agent_id, agentAliasId=alias.alias_id
            )["agentAlias"]
            return str(found["agentAliasArn"])

        return exists

    def _knowledge_base(self, kb: KnowledgeBase) -> Callable[[], str]:
        def exists() -> str:
            found = self.clients("bedrock-agent", kb.region).get_knowledge_base(
                knowledgeBaseId=kb.knowledge_base_id
            )["knowledgeBase"]
            return str(found["knowledgeBaseArn"])

        return exists

    def _model(self, arn: str) -> Callable[[], str]:
        def exists() -> str:
            self.clients("bedrock", _region_of(arn)).get_foundation_model(modelIdentifier=arn)
            return arn

        return exists


def failed(checks: list[Check]) -> bool:
    return any(c.outcome is Outcome.FAIL for c in checks)


__all__ = [
    "Check",
    "DeployConfig",
    "Doctor",
    "Outcome",
    "failed",
    "load_deploy_config",
]
