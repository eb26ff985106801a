"""From the event's ``target`` object to a ready Target, and its report name without one.

``target_name`` exists separately because Prepare and Aggregate need the report folder but
should not build clients (or need credentials) for a target they never call.
"""

from __future__ import annotations

from typing import Any

import boto3

from evalrunner.errors import ConfigError
from evalrunner.targets._common import report_name, sanitise_name
from evalrunner.targets.base import Target
from evalrunner.targets.bedrock_agent import BedrockAgentTarget
from evalrunner.targets.http import HttpTarget, endpoint_name
from evalrunner.targets.knowledge_base import KnowledgeBaseTarget
from evalrunner.targets.lambda_function import LambdaTarget, function_name
from evalrunner.targets.openai_chat import OpenAIChatTarget
from evalrunner.targets.step_functions import StepFunctionsTarget, state_machine_name

#: Kind key in the target object → the class that calls it.
TARGET_KINDS: dict[str, type[Target]] = {
    "agentId": BedrockAgentTarget,
    "stepFunctionArn": StepFunctionsTarget,
    "lambdaArn": LambdaTarget,
    "url": HttpTarget,
    "openai": OpenAIChatTarget,
    "knowledgeBaseId": KnowledgeBaseTarget,
}
#: Kinds that call AWS and so accept an injected boto3 session.
AWS_KINDS = frozenset({"agentId", "stepFunctionArn", "lambdaArn", "knowledgeBaseId"})
#: Keys a kind cannot work without, besides its kind key.
_COMPANIONS = {"agentId": ("agentAliasId",), "knowledgeBaseId": ("modelArn",)}


def detect_kind(spec: Any) -> str:
    """The one kind key present in ``spec``; ConfigError naming what was found otherwise."""
    if not isinstance(spec, dict):
        raise ConfigError(f"The target must be a JSON object, got {type(spec).__name__}.")
    found = [key for key in TARGET_KINDS if key in spec]
    if len(found) != 1:
        what = f"found {', '.join(found)}" if found else f"found none (keys: {sorted(spec)})"
        raise ConfigError(
            f"The target must name exactly one kind of target: {', '.join(TARGET_KINDS)}; "
            f'{what}. E.g. {{"agentId": "AGENT_ID", "agentAliasId": "ALIAS_ID"}} or '
            '{"lambdaArn": "arn:aws:lambda:..."}.'
        )
    kind = found[0]
    missing = [key for key in _COMPANIONS.get(kind, ()) if not spec.get(key)]
    if missing:
        raise ConfigError(f"A target with {kind} also needs {', '.join(missing)}.")
    if not spec.get(kind):
        raise ConfigError(f"target.{kind} is empty.")
    return kind


def target_name(spec: dict[str, Any]) -> str:
    """The report folder name (spec ``name`` wins), computed without building any client."""
    kind = detect_kind(spec)
    if kind == "agentId":
        own = f"{spec['agentId']}-{spec['agentAliasId']}"
    elif kind == "stepFunctionArn":
        own = state_machine_name(str(spec["stepFunctionArn"]))
    elif kind == "lambdaArn":
        own = function_name(str(spec["lambdaArn"]))
    elif kind == "url":
        own = endpoint_name(str(spec["url"]))
    elif kind == "openai":
        model = spec["openai"].get("model", "") if isinstance(spec["openai"], dict) else ""
        own = sanitise_name(str(model), fallback="openai")
    else:
        own = str(spec["knowledgeBaseId"])
    return report_name(spec, own)


def build_target(spec: dict[str, Any], *, session: boto3.Session | None = None) -> Target:
    """Build the target the spec names; ``session`` is used by the AWS kinds (tests, profiles).

    Clients are created here, once, and shared by all threads calling ``invoke``.
    """
    kind = detect_kind(spec)
    cls = TARGET_KINDS[kind]
    if kind in AWS_KINDS:
        return cls(spec, session=session)  # type: ignore[call-arg]
    return cls(spec)
