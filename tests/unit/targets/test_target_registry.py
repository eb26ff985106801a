"""The target registry: every kind declares itself once, and a new kind needs no other edit."""

from __future__ import annotations

from typing import Any, ClassVar

import pytest

from evalrunner.engine.real_aws import needs_real_aws
from evalrunner.targets import registry
from evalrunner.targets.base import Target, TargetResponse
from evalrunner.targets.factory import build_target, target_name
from evalrunner.targets.spec import SpecModel, TargetSpec
from infra.config import Targets


def test_every_kind_declares_what_the_rest_needs() -> None:
    kinds = registry.available()
    assert list(kinds) == [
        "agentId",
        "stepFunctionArn",
        "lambdaArn",
        "url",
        "openai",
        "azure_openai",
        "openai_responses",
        "knowledgeBaseId",
        "logged",
    ]
    for kind, cls in kinds.items():
        assert cls.kind == kind
        assert kind in cls.spec_model.model_fields, cls
        assert issubclass(cls.spec_model, TargetSpec)
        if cls.iam:  # what infra/parts/functions.py grants: one cdk.json list per kind
            assert cls.deploy_list in Targets.model_fields, cls
    assert {k for k, c in kinds.items() if c.calls_aws} == {
        "agentId",
        "stepFunctionArn",
        "lambdaArn",
        "knowledgeBaseId",
    }


def test_a_kind_cannot_be_registered_twice() -> None:
    class Impostor(Target):
        kind = "url"

    with pytest.raises(RuntimeError, match="already taken"):
        registry.register(Impostor)


def test_a_new_kind_is_one_class(monkeypatch: pytest.MonkeyPatch) -> None:
    """Register a kind; detection, names, building and the engine's AWS routing follow."""
    monkeypatch.setattr(registry, "_REGISTRY", dict(registry.available()))

    class EchoFields(SpecModel):
        schema_def: ClassVar[str] = "echo"
        echo: str

    class EchoSpec(EchoFields, TargetSpec):
        pass

    @registry.register
    class EchoTarget(Target):
        kind = "echo"
        spec_model = EchoSpec

        @classmethod
        def own_name(cls, spec: dict[str, Any]) -> str:
            return f"echo-{spec['echo']}"

        def invoke(self, case: Any) -> TargetResponse:
            return TargetResponse(answer=case.question)

    spec = {"echo": "x"}
    assert registry.detect_kind(spec) == "echo"
    assert target_name(spec) == "echo-x"
    target = build_target(spec)
    assert isinstance(target, EchoTarget) and target.name == "echo-x"
    assert not needs_real_aws(spec, set())


ALLOWED = Targets(
    lambda_arns=["arn:aws:lambda:eu-west-1:111122223333:function:hr"],
    state_machine_arns=["arn:aws:states:eu-west-1:111122223333:stateMachine:rag"],
    agent_aliases=[{"agent_id": "AGENT12345", "alias_id": "ALIAS12345"}],
    knowledge_bases=[{"knowledge_base_id": "KB12345678"}],
    model_arns=["arn:aws:bedrock:eu-west-1::foundation-model/m"],
    guardrail_arns=["arn:aws:bedrock:eu-west-1:111122223333:guardrail/gr1abcdefgh2"],
)
#: A knowledge base target whose generation applies a guardrail (by id, or by its ARN).
GUARDED = {
    "knowledgeBaseId": "KB12345678",
    "modelArn": "arn:aws:bedrock:eu-west-1::foundation-model/m",
}


def guarded(guardrail_id: str) -> dict[str, Any]:
    config = {"guardrailConfiguration": {"guardrailId": guardrail_id, "guardrailVersion": "1"}}
    return {**GUARDED, "generationConfiguration": config}


@pytest.mark.parametrize(
    ("spec", "refused"),
    [
        ({"lambdaArn": "arn:aws:lambda:eu-west-1:111122223333:function:hr:live"}, []),
        ({"lambdaArn": "hr"}, []),
        (
            {"lambdaArn": "other"},
            [
                "target.lambdaArn other is not in targets.lambda_arns; add it to targets in "
                "cdk.json (or set allow_all_targets: true)"
            ],
        ),
        ({"stepFunctionArn": "arn:aws:states:eu-west-1:111122223333:stateMachine:rag"}, []),
        (
            {"stepFunctionArn": "arn:aws:states:eu-west-1:111122223333:stateMachine:x"},
            [
                "target.stepFunctionArn arn:aws:states:eu-west-1:111122223333:stateMachine:x is "
                "not in targets.state_machine_arns; add it to targets in cdk.json (or set "
                "allow_all_targets: true)"
            ],
        ),
        ({"agentId": "AGENT12345", "agentAliasId": "ALIAS12345"}, []),
        (
            {"agentId": "AGENT12345", "agentAliasId": "TSTALIASID"},
            [
                "target agent AGENT12345/TSTALIASID is not in targets.agent_aliases; add it to "
                "targets in cdk.json (or set allow_all_targets: true)"
            ],
        ),
        (
            {
                "knowledgeBaseId": "KB12345678",
                "modelArn": "arn:aws:bedrock:eu-west-1::foundation-model/m",
            },
            [],
        ),
        (
            {"knowledgeBaseId": "KB00000000", "modelArn": "m"},
            [
                "target.knowledgeBaseId KB00000000 is not in targets.knowledge_bases; add it to "
                "targets in cdk.json (or set allow_all_targets: true)",
                "target.modelArn m is not in targets.model_arns",
            ],
        ),
        (guarded("gr1abcdefgh2"), []),
        (guarded("arn:aws:bedrock:eu-west-1:111122223333:guardrail/gr1abcdefgh2"), []),
        (
            guarded("gr9zzzzzzzz9"),
            [
                "target.generationConfiguration.guardrailConfiguration.guardrailId "
                "gr9zzzzzzzz9 is not in targets.guardrail_arns; add it to targets in cdk.json "
                "(or set allow_all_targets: true)"
            ],
        ),
        ({"url": "https://x.example.com/"}, []),
    ],
)
def test_each_kind_says_whether_the_deployed_runner_may_call_it(
    spec: dict[str, Any], refused: list[str]
) -> None:
    """What infra/config.py checks at synth: the resources the kind's IAM is granted on."""
    assert registry.target_class(spec).deploy_problems(spec, ALLOWED) == refused
