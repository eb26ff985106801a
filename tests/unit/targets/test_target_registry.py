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
        "knowledgeBaseId",
    ]
    for kind, cls in kinds.items():
        assert cls.kind == kind
        assert kind in cls.spec_model.model_fields, cls
        assert issubclass(cls.spec_model, TargetSpec)
        if cls.iam:  # what infra/stack.py grants: one cdk.json list per kind
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
