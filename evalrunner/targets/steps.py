"""What an agent did, normalised into steps: the tool or action group it called with its
arguments, the knowledge base it queried, the collaborator it handed over to.

Every target reports steps in this one shape, whatever its native trace: a Bedrock agent's
trace (``invocationInput`` / ``observation`` per orchestration step), the ``tool_calls`` of an
OpenAI-compatible reply, or a list a Lambda, state machine or HTTP endpoint returns at
``steps_path``. The agent evaluators (:mod:`evalrunner.evaluators.agent`) read only this.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

StepKind = Literal["tool", "knowledge_base", "collaborator"]

#: The most steps kept per answer: an agent stuck in a loop must not make a record huge.
MAX_STEPS = 200
#: The most characters kept of one step's arguments or output.
MAX_STEP_TEXT = 2000


class AgentStep(BaseModel):
    """One thing the agent did."""

    model_config = ConfigDict(extra="forbid")

    kind: StepKind = "tool"
    #: the tool ("group/function" for a Bedrock action group), knowledge base id, or agent
    name: str
    #: the call's arguments (a tool's parameters, a knowledge base query as ``{"query": …}``)
    arguments: dict[str, Any] = Field(default_factory=dict)
    #: what came back, cut to MAX_STEP_TEXT characters (None when the trace does not say)
    output: str | None = None
    #: the step itself failed (a failing tool, a rejected call)
    failed: bool = False
    error: str | None = None

    def signature(self) -> str:
        """The step's identity for loop detection: its name and arguments."""
        return f"{self.kind}:{self.name}:{json.dumps(self.arguments, sort_keys=True)}"


class ExpectedStep(BaseModel):
    """A step the suite expects (the ``expected_steps`` column): the tool by name, and the
    arguments it should get when given (None: any arguments)."""

    model_config = ConfigDict(extra="forbid")

    kind: StepKind = "tool"
    name: str = Field(min_length=1)
    arguments: dict[str, Any] | None = None


def _cut(text: Any) -> str | None:
    if text is None:
        return None
    value = text if isinstance(text, str) else json.dumps(text, ensure_ascii=False, default=str)
    return value[:MAX_STEP_TEXT]


def _arguments(raw: Any) -> dict[str, Any]:
    """Arguments as a dict: a JSON object string is parsed (OpenAI sends them as text);
    anything else is kept under ``"value"``, so nothing a target sent is lost."""
    if isinstance(raw, str):
        try:
            raw = json.loads(raw) if raw.strip() else {}
        except ValueError:
            return {"value": raw[:MAX_STEP_TEXT]}
    if isinstance(raw, Mapping):
        return {str(k): v for k, v in raw.items()}
    if raw is None:
        return {}
    return {"value": raw}


def steps_from_tool_calls(calls: Iterable[Any]) -> list[AgentStep]:
    """The ``tool_calls`` of an OpenAI-compatible assistant message."""
    steps = []
    for call in calls:
        if not isinstance(call, Mapping):
            continue
        function: Mapping[str, Any] = (
            call["function"] if isinstance(call.get("function"), Mapping) else {}
        )
        name = function.get("name") or call.get("name")
        if name:
            steps.append(AgentStep(name=str(name), arguments=_arguments(function.get("arguments"))))
    return steps[:MAX_STEPS]


def steps_from_json(value: Any) -> list[AgentStep]:
    """Steps a target returned as JSON (at ``steps_path``): a list of tool names, or of
    objects with ``name`` (or ``tool``), optional ``kind``, ``arguments`` (or ``args`` /
    ``input``), ``output``, ``failed`` / ``error``."""
    if isinstance(value, Mapping):
        value = [value]
    if not isinstance(value, list):
        return []
    steps = []
    for item in value[:MAX_STEPS]:
        if isinstance(item, str) and item.strip():
            steps.append(AgentStep(name=item.strip()))
            continue
        if not isinstance(item, Mapping):
            continue
        name = item.get("name") or item.get("tool") or item.get("function")
        if not name:
            continue
        kind: StepKind = "tool"
        if item.get("kind") == "knowledge_base":
            kind = "knowledge_base"
        elif item.get("kind") == "collaborator":
            kind = "collaborator"
        error = item.get("error")
        steps.append(
            AgentStep(
                kind=kind,
                name=str(name),
                arguments=_arguments(item.get("arguments", item.get("args", item.get("input")))),
                output=_cut(item.get("output")),
                failed=bool(item.get("failed")) or bool(error),
                error=_cut(error),
            )
        )
    return steps


def add_bedrock_trace_steps(step: Mapping[str, Any], found: list[AgentStep]) -> None:
    """Add to ``found`` the steps of one Bedrock agent trace part (``orchestrationTrace`` and
    the like): an action group call, a knowledge base lookup or a collaborator; an
    observation (which arrives in a later trace event) is the output of the last such step
    still without one."""
    if len(found) >= MAX_STEPS:
        return
    invocation = step.get("invocationInput") or {}
    action = invocation.get("actionGroupInvocationInput")
    if isinstance(action, Mapping):
        group = action.get("actionGroupName") or action.get("actionGroup")
        detail = action.get("function") or action.get("apiPath")
        name = f"{group}/{detail}" if group and detail else group or detail
        if name:
            params = action.get("parameters") or []
            arguments = {
                str(p.get("name")): p.get("value")
                for p in params
                if isinstance(p, Mapping) and p.get("name")
            }
            body = (action.get("requestBody") or {}).get("content")
            if body and not arguments:
                arguments = {"requestBody": body}
            found.append(AgentStep(name=str(name), arguments=arguments))
    lookup = invocation.get("knowledgeBaseLookupInput")
    if isinstance(lookup, Mapping):
        found.append(
            AgentStep(
                kind="knowledge_base",
                name=str(lookup.get("knowledgeBaseId") or "knowledge base"),
                arguments={"query": lookup.get("text")},
            )
        )
    collaborator = invocation.get("agentCollaboratorInvocationInput")
    if isinstance(collaborator, Mapping) and collaborator.get("agentCollaboratorName"):
        text = (collaborator.get("input") or {}).get("text")
        found.append(
            AgentStep(
                kind="collaborator",
                name=str(collaborator["agentCollaboratorName"]),
                arguments={"input": text} if text else {},
            )
        )
    observation = step.get("observation") or {}
    output = (observation.get("actionGroupInvocationOutput") or {}).get("text")
    if output is not None:
        _attach_output(found, "tool", output)
    references = (observation.get("knowledgeBaseLookupOutput") or {}).get("retrievedReferences")
    if references is not None:
        _attach_output(found, "knowledge_base", f"{len(references)} reference(s)")


def _attach_output(found: list[AgentStep], kind: StepKind, output: Any) -> None:
    """An observation answers the invocation of the same trace part."""
    for index in range(len(found) - 1, -1, -1):
        if found[index].kind == kind and found[index].output is None:
            found[index] = found[index].model_copy(update={"output": _cut(output)})
            return


def tool_names(steps: Iterable[AgentStep]) -> list[str]:
    """The tools called, in order (knowledge base lookups and hand-overs left out)."""
    return [s.name for s in steps if s.kind == "tool"]
