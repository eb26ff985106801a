"""``evalrunner doctor --aws`` (issue 29 item 10): each check passes and fails on the replies
AWS gives (botocore Stubber: real clients, real request validation, scripted replies), and
the command's exit code follows (5 when a check fails)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore import xform_name
from botocore.stub import Stubber
from typer.testing import CliRunner

from evalrunner.cli import app
from evalrunner.doctor import (
    GPU_QUOTA_ON_DEMAND,
    AgentAlias,
    BatchScoring,
    Check,
    DeployConfig,
    Doctor,
    KnowledgeBase,
    Outcome,
    Targets,
    load_deploy_config,
)

REGION = "eu-west-1"
ACCOUNT = "111122223333"
MODEL = "anthropic.claude-sonnet-4-5-20250929-v1:0"
PROFILE = f"eu.{MODEL}"
FN = f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:hr-assistant"
SM = f"arn:aws:states:{REGION}:{ACCOUNT}:stateMachine:rag-flow"
ROLE = f"arn:aws:iam::{ACCOUNT}:role/Evalrunner-RunCaseRole"
ALIAS_ARN = f"arn:aws:bedrock:{REGION}:{ACCOUNT}:agent-alias/AGENT12345/ALIAS12345"
KB_ARN = f"arn:aws:bedrock:{REGION}:{ACCOUNT}:knowledge-base/KB12345678"
PROFILE_ARN = f"arn:aws:bedrock:{REGION}:{ACCOUNT}:inference-profile/{PROFILE}"
NOW = datetime(2026, 11, 26, tzinfo=UTC)


class Stubs:
    """One stubbed client per service; the factory doctor is given."""

    def __init__(self) -> None:
        self.clients: dict[str, Any] = {}
        self.stubbers: dict[str, Stubber] = {}

    def __call__(self, service: str, region: str | None) -> Any:
        return self.client(service)

    def client(self, service: str) -> Any:
        if service not in self.clients:
            client = boto3.client(
                service,
                region_name=REGION,
                aws_access_key_id="AKIDEXAMPLE",
                aws_secret_access_key="secret",
            )
            self.clients[service] = client
            self.stubbers[service] = Stubber(client)
            self.stubbers[service].activate()
        return self.clients[service]

    def reply(self, service: str, operation: str, response: dict[str, Any], params: Any = None):
        self.client(service)
        self.stubbers[service].add_response(xform_name(operation), response, params)

    def error(self, service: str, operation: str, code: str, message: str = "denied", status=400):
        self.client(service)
        self.stubbers[service].add_client_error(
            xform_name(operation),
            service_error_code=code,
            service_message=message,
            http_status_code=status,
        )

    def done(self) -> None:
        for stubber in self.stubbers.values():
            stubber.assert_no_pending_responses()


@pytest.fixture
def stubs() -> Iterator[Stubs]:
    made = Stubs()
    yield made
    made.done()


def config(**overrides: Any) -> DeployConfig:
    base: dict[str, Any] = {
        "judge_model": MODEL,
        "batch_scoring": BatchScoring(enabled=False),
    }
    return DeployConfig(**{**base, **overrides})


def identity(stubs: Stubs) -> None:
    stubs.reply(
        "sts",
        "GetCallerIdentity",
        {"Account": ACCOUNT, "Arn": f"arn:aws:iam::{ACCOUNT}:user/dev", "UserId": "AIDA"},
    )


def model_details(status: str = "ACTIVE") -> dict[str, Any]:
    return {
        "modelDetails": {
            "modelArn": f"arn:aws:bedrock:{REGION}::foundation-model/{MODEL}",
            "modelId": MODEL,
            "modelName": "Claude",
            "providerName": "Anthropic",
            "modelLifecycle": {"status": status},
        }
    }


def availability(**overrides: Any) -> dict[str, Any]:
    return {
        "modelId": MODEL,
        "agreementAvailability": {"status": "AVAILABLE"},
        "authorizationStatus": "AUTHORIZED",
        "entitlementAvailability": "AVAILABLE",
        "regionAvailability": "AVAILABLE",
        **overrides,
    }


def by_name(checks: list[Check]) -> dict[str, Check]:
    return {c.name: c for c in checks}


def judge_checks(stubs: Stubs, **kwargs: Any) -> dict[str, Check]:
    doctor = Doctor(stubs, config(**kwargs.pop("cfg", {})), region=REGION, **kwargs)
    doctor.account = ACCOUNT
    return by_name(list(doctor.judge()))


# ------------------------------------------------------------------------------ account


def test_account_and_region_pass(stubs: Stubs) -> None:
    identity(stubs)
    check = Doctor(stubs, config(), region=REGION).identity()
    assert check.outcome is Outcome.PASS
    assert ACCOUNT in check.detail and REGION in check.detail and check.fix is None


def test_refused_credentials_fail_first_and_alone(stubs: Stubs) -> None:
    stubs.error("sts", "GetCallerIdentity", "InvalidClientTokenId", "The security token is invalid")
    checks = Doctor(stubs, config(), region=REGION).run()
    assert [c.outcome for c in checks] == [Outcome.FAIL]
    assert "InvalidClientTokenId" in checks[0].detail and "aws sso login" in (checks[0].fix or "")


def test_no_region_fails(stubs: Stubs) -> None:
    (check,) = Doctor(stubs, config(), region=None).run()
    assert check.outcome is Outcome.FAIL and "region" in check.detail


# ------------------------------------------------------------------------------ the judge


def test_an_active_granted_judge_passes(stubs: Stubs) -> None:
    stubs.reply("bedrock", "GetFoundationModel", model_details(), {"modelIdentifier": MODEL})
    stubs.reply("bedrock", "GetFoundationModelAvailability", availability(), {"modelId": MODEL})
    checks = judge_checks(stubs)
    assert checks["judge model"].outcome is Outcome.PASS
    assert checks["judge model access"].outcome is Outcome.PASS
    assert "judge call" not in checks  # no Converse call unless asked for


def test_a_legacy_judge_warns_with_the_fix(stubs: Stubs) -> None:
    stubs.reply("bedrock", "GetFoundationModel", model_details("LEGACY"))
    stubs.reply("bedrock", "GetFoundationModelAvailability", availability())
    check = judge_checks(stubs)["judge model"]
    assert check.outcome is Outcome.WARN and "LEGACY" in check.detail
    assert "ACTIVE" in (check.fix or "")


def test_an_unknown_judge_fails(stubs: Stubs) -> None:
    stubs.error("bedrock", "GetFoundationModel", "ResourceNotFoundException", "no such model")
    check = judge_checks(stubs)["judge model"]
    assert check.outcome is Outcome.FAIL and "ResourceNotFoundException" in check.detail
    assert "list-foundation-models" in (check.fix or "")


def test_a_judge_without_model_access_fails_with_the_console_step(stubs: Stubs) -> None:
    stubs.reply("bedrock", "GetFoundationModel", model_details())
    stubs.reply(
        "bedrock",
        "GetFoundationModelAvailability",
        availability(
            authorizationStatus="NOT_AUTHORIZED",
            agreementAvailability={"status": "NOT_AVAILABLE"},
        ),
    )
    check = judge_checks(stubs)["judge model access"]
    assert check.outcome is Outcome.FAIL
    assert "authorization is NOT_AUTHORIZED" in check.detail and "agreement" in check.detail
    assert "Model access" in (check.fix or "") and "Marketplace" in (check.fix or "")


def test_an_inference_profile_is_checked_and_its_model_too(stubs: Stubs) -> None:
    stubs.reply(
        "bedrock",
        "GetInferenceProfile",
        {
            "inferenceProfileName": "EU Claude",
            "inferenceProfileArn": PROFILE_ARN,
            "models": [{"modelArn": f"arn:aws:bedrock:{REGION}::foundation-model/{MODEL}"}],
            "inferenceProfileId": PROFILE,
            "status": "ACTIVE",
            "type": "SYSTEM_DEFINED",
        },
        {"inferenceProfileIdentifier": PROFILE},
    )
    stubs.reply("bedrock", "GetFoundationModel", model_details(), {"modelIdentifier": MODEL})
    stubs.reply("bedrock", "GetFoundationModelAvailability", availability(), {"modelId": MODEL})
    checks = judge_checks(stubs, cfg={"judge_model": PROFILE})
    assert checks["judge model"].outcome is Outcome.PASS and PROFILE in checks["judge model"].detail


def test_an_unknown_inference_profile_fails(stubs: Stubs) -> None:
    stubs.error("bedrock", "GetInferenceProfile", "ResourceNotFoundException")
    check = judge_checks(stubs, cfg={"judge_model": PROFILE})["judge model"]
    assert check.outcome is Outcome.FAIL and "list-inference-profiles" in (check.fix or "")


def test_the_one_token_call_only_when_asked_and_its_failure(stubs: Stubs) -> None:
    for reply in ("ok", "denied"):
        stubs.reply("bedrock", "GetFoundationModel", model_details())
        stubs.reply("bedrock", "GetFoundationModelAvailability", availability())
        expected = {
            "modelId": MODEL,
            "messages": [{"role": "user", "content": [{"text": "Say OK."}]}],
            "inferenceConfig": {"maxTokens": 1},
        }
        if reply == "ok":
            stubs.reply(
                "bedrock-runtime",
                "Converse",
                {
                    "output": {"message": {"role": "assistant", "content": [{"text": "OK"}]}},
                    "stopReason": "max_tokens",
                    "usage": {"inputTokens": 3, "outputTokens": 1, "totalTokens": 4},
                    "metrics": {"latencyMs": 200},
                },
                expected,
            )
            assert judge_checks(stubs, converse=True)["judge call"].outcome is Outcome.PASS
        else:
            stubs.error(
                "bedrock-runtime",
                "Converse",
                "AccessDeniedException",
                "Model access is denied due to IAM user or service role is not authorized to "
                "perform the required AWS Marketplace actions",
                403,
            )
            check = judge_checks(stubs, converse=True)["judge call"]
            assert check.outcome is Outcome.FAIL and "AccessDeniedException" in check.detail
            assert "Model access" in (check.fix or "")


# ------------------------------------------------------------------------------ quotas


def quota(value: float) -> dict[str, Any]:
    return {
        "Quota": {
            "ServiceCode": "ec2",
            "QuotaCode": GPU_QUOTA_ON_DEMAND,
            "QuotaName": "Running On-Demand G and VT instances",
            "Value": value,
        }
    }


@pytest.mark.parametrize(
    ("value", "outcome"), [(0.0, Outcome.FAIL), (8.0, Outcome.WARN), (64.0, Outcome.PASS)]
)
def test_gpu_quota(stubs: Stubs, value: float, outcome: Outcome) -> None:
    stubs.reply(
        "service-quotas",
        "GetServiceQuota",
        quota(value),
        {"ServiceCode": "ec2", "QuotaCode": GPU_QUOTA_ON_DEMAND},
    )
    cfg = config(batch_scoring=BatchScoring(max_vcpus=16))
    check = Doctor(stubs, cfg, region=REGION).gpu_quota()
    assert check.outcome is outcome, check
    if outcome is not Outcome.PASS:
        assert f"--quota-code {GPU_QUOTA_ON_DEMAND}" in (check.fix or "")
        assert "scoring: cpu" in (check.fix or "")


def test_gpu_quota_never_set_reads_the_default(stubs: Stubs) -> None:
    stubs.error("service-quotas", "GetServiceQuota", "NoSuchResourceException")
    stubs.reply("service-quotas", "GetAWSDefaultServiceQuota", quota(0.0))
    check = Doctor(stubs, config(batch_scoring=BatchScoring()), region=REGION).gpu_quota()
    assert check.outcome is Outcome.FAIL and "would wait RUNNABLE" in check.detail


def test_gpu_quota_is_skipped_without_batch_scoring(stubs: Stubs) -> None:
    assert Doctor(stubs, config(), region=REGION).gpu_quota().outcome is Outcome.SKIP


@pytest.mark.parametrize(
    ("total", "unreserved", "outcome"),
    [(10, 10, Outcome.FAIL), (1000, 1000, Outcome.PASS), (1000, 15, Outcome.FAIL)],
)
def test_lambda_concurrency(stubs: Stubs, total: int, unreserved: int, outcome: Outcome) -> None:
    stubs.reply(
        "lambda",
        "GetAccountSettings",
        {
            "AccountLimit": {
                "TotalCodeSize": 80530636800,
                "CodeSizeUnzipped": 262144000,
                "CodeSizeZipped": 52428800,
                "ConcurrentExecutions": total,
                "UnreservedConcurrentExecutions": unreserved,
            },
            "AccountUsage": {"TotalCodeSize": 0, "FunctionCount": 0},
        },
    )
    check = Doctor(stubs, config(), region=REGION, concurrency=10).lambda_concurrency()
    assert check.outcome is outcome
    if outcome is Outcome.FAIL:
        assert "--service-code lambda --quota-code L-B99A9384" in (check.fix or "")


@pytest.mark.parametrize(("total", "outcome"), [(10, Outcome.FAIL), (60, Outcome.PASS)])
def test_the_case_runner_reservation_must_fit_the_account(
    stubs: Stubs, total: int, outcome: Outcome
) -> None:
    """A new account's 10 cannot hold the stack's reservation of 50 (+ the 10 Lambda keeps)."""
    stubs.reply(
        "lambda",
        "GetAccountSettings",
        {"AccountLimit": {"ConcurrentExecutions": total, "UnreservedConcurrentExecutions": total}},
    )
    cfg = config(case_runner_reserved_concurrency=50)
    check = Doctor(stubs, cfg, region=REGION).lambda_concurrency()
    assert check.outcome is outcome and "reserves 50" in check.detail


# ------------------------------------------------------------------------------ targets


def all_targets() -> Targets:
    return Targets(
        lambda_arns=[FN],
        state_machine_arns=[SM],
        agent_aliases=[AgentAlias(agent_id="AGENT12345", alias_id="ALIAS12345")],
        knowledge_bases=[KnowledgeBase(knowledge_base_id="KB12345678")],
    )


def targets_exist(stubs: Stubs) -> None:
    stubs.reply(
        "lambda",
        "GetFunction",
        {"Configuration": {"FunctionName": "hr-assistant", "FunctionArn": FN}},
        {"FunctionName": FN},
    )
    stubs.reply(
        "stepfunctions",
        "DescribeStateMachine",
        {
            "stateMachineArn": SM,
            "name": "rag-flow",
            "definition": "{}",
            "roleArn": ROLE,
            "type": "STANDARD",
            "creationDate": NOW,
        },
        {"stateMachineArn": SM},
    )
    stubs.reply(
        "bedrock-agent",
        "GetAgentAlias",
        {
            "agentAlias": {
                "agentId": "AGENT12345",
                "agentAliasId": "ALIAS12345",
                "agentAliasName": "live",
                "agentAliasArn": ALIAS_ARN,
                "routingConfiguration": [],
                "createdAt": NOW,
                "updatedAt": NOW,
                "agentAliasStatus": "PREPARED",
            }
        },
        {"agentId": "AGENT12345", "agentAliasId": "ALIAS12345"},
    )
    stubs.reply(
        "bedrock-agent",
        "GetKnowledgeBase",
        {
            "knowledgeBase": {
                "knowledgeBaseId": "KB12345678",
                "name": "hr",
                "knowledgeBaseArn": KB_ARN,
                "roleArn": ROLE,
                "knowledgeBaseConfiguration": {"type": "VECTOR"},
                "status": "ACTIVE",
                "createdAt": NOW,
                "updatedAt": NOW,
            }
        },
        {"knowledgeBaseId": "KB12345678"},
    )


def deployed(stubs: Stubs) -> None:
    stubs.reply(
        "cloudformation",
        "DescribeStacks",
        {
            "Stacks": [
                {
                    "StackName": "Evalrunner",
                    "CreationTime": NOW,
                    "StackStatus": "CREATE_COMPLETE",
                    "Outputs": [{"OutputKey": "RunnerRoleArn", "OutputValue": ROLE}],
                }
            ]
        },
        {"StackName": "Evalrunner"},
    )


def simulated(stubs: Stubs, action: str, arn: str, decision: str) -> None:
    stubs.reply(
        "iam",
        "SimulatePrincipalPolicy",
        {
            "EvaluationResults": [
                {"EvalActionName": action, "EvalResourceName": arn, "EvalDecision": decision}
            ]
        },
        {"PolicySourceArn": ROLE, "ActionNames": [action], "ResourceArns": [arn]},
    )


def test_targets_exist_and_the_runner_role_may_call_them(stubs: Stubs) -> None:
    targets_exist(stubs)
    deployed(stubs)
    simulated(stubs, "lambda:InvokeFunction", FN, "allowed")
    simulated(stubs, "states:StartExecution", SM, "allowed")
    simulated(stubs, "bedrock:InvokeAgent", ALIAS_ARN, "allowed")
    simulated(stubs, "bedrock:Retrieve", KB_ARN, "allowed")
    checks = list(
        Doctor(stubs, config(targets=all_targets(), judge_model=None), region=REGION).targets()
    )
    assert [c.outcome for c in checks] == [Outcome.PASS] * 4
    assert all("the runner role may call" in c.detail for c in checks)


def test_a_target_the_role_may_not_call_fails_with_the_fix(stubs: Stubs) -> None:
    stubs.reply("lambda", "GetFunction", {"Configuration": {"FunctionArn": FN}})
    deployed(stubs)
    simulated(stubs, "lambda:InvokeFunction", FN, "implicitDeny")
    (check,) = Doctor(
        stubs, config(targets=Targets(lambda_arns=[FN]), judge_model=None), region=REGION
    ).targets()
    assert check.outcome is Outcome.FAIL and "implicitDeny" in check.detail
    assert "cdk.json 'targets'" in (check.fix or "")


def test_a_missing_target_fails(stubs: Stubs) -> None:
    deployed(stubs)
    stubs.error("stepfunctions", "DescribeStateMachine", "StateMachineDoesNotExist")
    cfg = config(targets=Targets(state_machine_arns=[SM]), judge_model=None)
    (check,) = Doctor(stubs, cfg, region=REGION).targets()
    assert check.outcome is Outcome.FAIL and "StateMachineDoesNotExist" in check.detail


def test_before_the_first_deploy_targets_are_checked_and_the_role_is_skipped(stubs: Stubs) -> None:
    not_deployed(stubs)
    stubs.reply("lambda", "GetFunction", {"Configuration": {"FunctionArn": FN}})
    skipped, exists = Doctor(
        stubs, config(targets=Targets(lambda_arns=[FN]), judge_model=None), region=REGION
    ).targets()
    assert skipped.outcome is Outcome.SKIP and "after 'cdk deploy'" in skipped.detail
    assert exists.outcome is Outcome.PASS


@pytest.mark.parametrize(
    ("decision", "outcome"), [("allowed", Outcome.PASS), ("implicitDeny", Outcome.FAIL)]
)
def test_the_runner_role_may_invoke_the_judge(
    stubs: Stubs, decision: str, outcome: Outcome
) -> None:
    deployed(stubs)
    simulated(stubs, "bedrock:InvokeModel", PROFILE_ARN, decision)
    doctor = Doctor(stubs, config(judge_model=PROFILE), region=REGION)
    doctor.account = ACCOUNT
    (check,) = doctor.targets()
    assert check.outcome is outcome and PROFILE in check.detail


def not_deployed(stubs: Stubs) -> None:
    stubs.error(
        "cloudformation",
        "DescribeStacks",
        "ValidationError",
        "Stack with id Evalrunner does not exist",
    )


# ------------------------------------------------------------------------------ the command


def write_cdk_json(tmp_path: Path, **evalrunner: Any) -> Path:
    path = tmp_path / "cdk.json"
    settings = {"judge": {"bedrock": {"model_id": MODEL}}, "batch_scoring": {"enabled": False}}
    settings.update(evalrunner)
    path.write_text(json.dumps({"context": {"stack_name": "Evalrunner", "evalrunner": settings}}))
    return path


def test_the_repository_cdk_json_is_read(tmp_path: Path) -> None:
    config = load_deploy_config(Path(__file__).resolve().parents[2] / "cdk.json")
    assert config.stack_name and config.judge_model and config.batch_scoring.enabled
    unreserved = write_cdk_json(tmp_path, case_runner_reserved_concurrency=None)
    assert load_deploy_config(unreserved).case_runner_reserved_concurrency is None


def invoke(monkeypatch: pytest.MonkeyPatch, stubs: Stubs, *args: str) -> Any:
    monkeypatch.setattr(
        "evalrunner.cli.doctoring.aws_clients", lambda profile, region: (stubs, REGION)
    )
    return CliRunner().invoke(app, ["doctor", *args], catch_exceptions=False)


def test_the_command_passes_with_exit_0(
    stubs: Stubs, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    identity(stubs)
    stubs.reply("bedrock", "GetFoundationModel", model_details())
    stubs.reply("bedrock", "GetFoundationModelAvailability", availability())
    stubs.reply(
        "lambda",
        "GetAccountSettings",
        {"AccountLimit": {"ConcurrentExecutions": 1000, "UnreservedConcurrentExecutions": 1000}},
    )
    not_deployed(stubs)
    result = invoke(monkeypatch, stubs, "--aws", "--cdk-json", str(write_cdk_json(tmp_path)))
    assert result.exit_code == 0, result.output
    assert "PASS  account" in result.output and "PASS  judge model access" in result.output


def test_the_command_fails_with_exit_5_and_says_the_fix(
    stubs: Stubs, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    identity(stubs)
    stubs.reply("bedrock", "GetFoundationModel", model_details())
    stubs.reply(
        "bedrock",
        "GetFoundationModelAvailability",
        availability(authorizationStatus="NOT_AUTHORIZED"),
    )
    stubs.reply(
        "lambda",
        "GetAccountSettings",
        {"AccountLimit": {"ConcurrentExecutions": 1000, "UnreservedConcurrentExecutions": 1000}},
    )
    not_deployed(stubs)
    path = write_cdk_json(tmp_path)
    result = invoke(monkeypatch, stubs, "--aws", "--cdk-json", str(path), "--json")
    assert result.exit_code == 5, result.output
    checks = {c["name"]: c for c in json.loads(result.output)}
    assert checks["judge model access"]["outcome"] == "fail"
    assert "Model access" in checks["judge model access"]["fix"]


def test_the_command_needs_aws_and_a_cdk_json(tmp_path: Path) -> None:
    runner = CliRunner()
    assert runner.invoke(app, ["doctor"]).exit_code == 2
    result = runner.invoke(app, ["doctor", "--aws", "--cdk-json", str(tmp_path / "none.json")])
    assert result.exit_code == 2 and "does not exist" in result.output
