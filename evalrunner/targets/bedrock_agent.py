"""A Bedrock agent alias as the system under test (``"agentId"`` + ``"agentAliasId"``).

The answer arrives as an event stream of chunks; what the agent retrieved and which tools it
used only appear in the chunk attributions and in the trace, so the trace is on by default.
Errors can arrive in the middle of that stream (throttling is the common one), after botocore's
own retries no longer apply, so this module retries those itself, within ``max_retries``.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, ClassVar

import boto3
from botocore.exceptions import EventStreamError
from pydantic import Field

from evalrunner.errors import TargetError, TargetTimeout
from evalrunner.http_client import ResponseTooLarge
from evalrunner.suite.model import TestCase
from evalrunner.targets._aws import aws_errors, make_client
from evalrunner.targets._common import (
    retry_policy,
)
from evalrunner.targets.base import (
    DEPLOY_HINT,
    ConversationSession,
    IamGrant,
    Target,
    TargetResponse,
)
from evalrunner.targets.registry import register
from evalrunner.targets.reply_contexts import bedrock_references
from evalrunner.targets.spec import SpecModel, TargetSpec
from evalrunner.targets.steps import AgentStep, add_bedrock_trace_steps

#: Event-stream exceptions worth another attempt: capacity and transient service trouble.
RETRYABLE_STREAM_ERRORS = {
    "throttlingException",
    "serviceQuotaExceededException",
    "internalServerException",
    "badGatewayException",
    "dependencyFailedException",
    "modelNotReadyException",
    "conflictException",
}
STREAM_ERRORS = RETRYABLE_STREAM_ERRORS | {
    "accessDeniedException",
    "resourceNotFoundException",
    "validationException",
}


class AgentStreamError(TargetError):
    """An exception event inside the completion stream (botocore does not retry these)."""


@dataclass
class AgentReply:
    """What one InvokeAgent call produced, gathered from its chunks and trace."""

    text: str = ""
    cited_contexts: list[str] = field(default_factory=list)
    cited_documents: list[str] = field(default_factory=list)
    looked_up_contexts: list[str] = field(default_factory=list)
    looked_up_documents: list[str] = field(default_factory=list)
    tools: list[str] = field(default_factory=list)
    steps: list[AgentStep] = field(default_factory=list)
    input_tokens: int | None = None
    output_tokens: int | None = None
    failure: str | None = None
    returned_control: bool = False

    def add_usage(self, usage: Any) -> None:
        if not isinstance(usage, dict):
            return
        if isinstance(usage.get("inputTokens"), int):
            self.input_tokens = (self.input_tokens or 0) + usage["inputTokens"]
        if isinstance(usage.get("outputTokens"), int):
            self.output_tokens = (self.output_tokens or 0) + usage["outputTokens"]


def _tool_of_action_group(invocation: dict[str, Any]) -> str | None:
    group = invocation.get("actionGroupName") or invocation.get("actionGroup")
    detail = invocation.get("function") or invocation.get("apiPath")
    if group and detail:
        return f"{group}/{detail}"
    return group or detail or None


def _read_trace(trace_part: dict[str, Any], reply: AgentReply) -> None:
    trace = trace_part.get("trace")
    if not isinstance(trace, dict):
        return
    for step in trace.values():  # orchestrationTrace, preProcessingTrace, ...
        if not isinstance(step, dict):
            continue
        add_bedrock_trace_steps(step, reply.steps)
        reply.add_usage(
            ((step.get("modelInvocationOutput") or {}).get("metadata") or {}).get("usage")
        )
        invocation = step.get("invocationInput") or {}
        action = invocation.get("actionGroupInvocationInput")
        if isinstance(action, dict) and (tool := _tool_of_action_group(action)):
            reply.tools.append(tool)
        collaborator = invocation.get("agentCollaboratorInvocationInput")
        if isinstance(collaborator, dict) and collaborator.get("agentCollaboratorName"):
            reply.tools.append(str(collaborator["agentCollaboratorName"]))
        lookup = (step.get("observation") or {}).get("knowledgeBaseLookupOutput") or {}
        contexts, documents = bedrock_references(lookup.get("retrievedReferences") or ())
        reply.looked_up_contexts.extend(contexts)
        reply.looked_up_documents.extend(documents)
        if step.get("failureReason"):  # failureTrace
            reply.failure = str(step["failureReason"])


def _read_return_control(payload: dict[str, Any], reply: AgentReply) -> None:
    """A RETURN_CONTROL action group hands the tool call back instead of answering."""
    reply.returned_control = True
    for invocation in payload.get("invocationInputs") or ():
        if not isinstance(invocation, dict):
            continue
        for key in ("functionInvocationInput", "apiInvocationInput"):
            details = invocation.get(key)
            if isinstance(details, dict) and (tool := _tool_of_action_group(details)):
                reply.tools.append(tool)


def read_completion(
    events: Iterable[dict[str, Any]],
    what: str,
    *,
    deadline: float | None = None,
    timeout: float | None = None,
    max_bytes: int | None = None,
) -> AgentReply:
    """Consume an InvokeAgent ``completion`` stream (botocore's parsed event dicts).

    The stream may go on for a long time with each event inside botocore's read timeout, so
    the whole-call ``deadline`` (``time.monotonic()`` value) is checked between events and
    the answer's bytes against ``max_bytes``; either ends the read and closes the stream.
    A stall *within* one event is bounded by the read timeout only.
    """
    reply = AgentReply()
    parts: list[bytes] = []  # decoded once at the end: a character may span two chunks
    size = 0
    try:
        for event in events:
            if deadline is not None and time.monotonic() > deadline:
                _close(events)
                raise TargetTimeout(
                    f"{what} did not finish its answer within timeout_seconds={timeout or 0:g}"
                    " (the whole stream). Raise target.timeout_seconds if it is just slow.",
                    retryable=True,
                )
            if "chunk" in event:
                chunk = event["chunk"] or {}
                data = chunk.get("bytes")
                if data:
                    parts.append(data if isinstance(data, bytes) else str(data).encode("utf-8"))
                    size += len(parts[-1])
                    if max_bytes is not None and size > max_bytes:
                        _close(events)
                        raise ResponseTooLarge(what, "more was streamed", max_bytes)
                for citation in (chunk.get("attribution") or {}).get("citations") or ():
                    contexts, documents = bedrock_references(
                        citation.get("retrievedReferences") or ()
                    )
                    reply.cited_contexts.extend(contexts)
                    reply.cited_documents.extend(documents)
            elif "trace" in event:
                _read_trace(event["trace"] or {}, reply)
            elif "returnControl" in event:
                _read_return_control(event["returnControl"] or {}, reply)
            else:
                for code in STREAM_ERRORS.intersection(event):
                    message = (event[code] or {}).get("message", "")
                    raise _stream_error(code, message, what)
    except EventStreamError as exc:
        error = exc.response.get("Error", {})
        raise _stream_error(
            str(error.get("Code", "")), str(error.get("Message", "")), what
        ) from exc
    reply.text = b"".join(parts).decode("utf-8", errors="replace")
    return reply


def _close(events: Iterable[dict[str, Any]]) -> None:
    close = getattr(events, "close", None)
    if close is not None:
        close()


def _stream_error(code: str, message: str, what: str) -> AgentStreamError:
    if code in ("throttlingException", "serviceQuotaExceededException"):
        hint = " Lower the run's max_concurrency or raise the agent's model quota."
    elif code == "accessDeniedException":
        hint = " Check the agent role's permissions (model, knowledge base, action groups)."
    else:
        hint = ""
    return AgentStreamError(
        f"{what} failed mid-answer with {code}: {message}.{hint}",
        retryable=code in RETRYABLE_STREAM_ERRORS,
    )


class BedrockAgentFields(SpecModel):
    """``{"agentId", "agentAliasId"}``: the alias of a Bedrock agent."""

    schema_def: ClassVar[str] = "bedrockAgent"

    agentId: str = Field(pattern=r"^[0-9a-zA-Z]{10}$")
    agentAliasId: str = Field(pattern=r"^([0-9a-zA-Z]{10}|TSTALIASID)$")
    enableTrace: bool = True
    sessionAttributes: dict[str, str] | None = None


class BedrockAgentSpec(BedrockAgentFields, TargetSpec):
    """A Bedrock agent target as the event gives it."""


@register
class BedrockAgentTarget(Target):
    """Asks an agent alias in a fresh session per case (so cases never share memory)."""

    kind = "agentId"
    spec_model = BedrockAgentSpec
    options: BedrockAgentSpec
    companions = ("agentAliasId",)
    calls_aws = True
    deploy_list = "agent_aliases"
    iam = (
        IamGrant(
            "InvokeTargetAgents",
            ("bedrock:InvokeAgent",),
            "arn:{partition}:bedrock:{region}:{account}:agent-alias/{agent_id}/{alias_id}",
        ),
    )

    #: First backoff step (seconds) for retrying mid-stream errors; doubled each attempt.
    backoff_base_s = 1.0

    def __init__(self, spec: dict[str, Any], *, session: boto3.Session | None = None) -> None:
        super().__init__(spec)
        self.agent_id = self.options.agentId
        self.alias_id = self.options.agentAliasId
        self.enable_trace = self.options.enableTrace
        self.session_attributes = self.options.sessionAttributes
        self.timeout = self.options.timeout_seconds
        self.retries = self.options.max_retries
        self.budget = self.options.call_budget
        self.max_bytes = self.options.max_response_bytes
        self.client = make_client("bedrock-agent-runtime", self.options, session=session)
        self.region = self.client.meta.region_name

    @classmethod
    def own_name(cls, spec: dict[str, Any]) -> str:
        return f"{spec['agentId']}-{spec['agentAliasId']}"

    @classmethod
    def deploy_problems(cls, spec: dict[str, Any], allowed: Any) -> list[str]:
        pair = (spec.get("agentId"), spec.get("agentAliasId"))
        if pair in {(a.agent_id, a.alias_id) for a in allowed.agent_aliases}:
            return []
        return [f"target agent {pair[0]}/{pair[1]} is not in targets.agent_aliases; {DEPLOY_HINT}"]

    @property
    def _what(self) -> str:
        return f"Bedrock agent {self.agent_id} alias {self.alias_id}"

    def invoke(self, case: TestCase) -> TargetResponse:
        return self._retrying(lambda: self._converse(case))

    def invoke_turn(self, case: TestCase, session: ConversationSession) -> TargetResponse:
        """One turn in the conversation's own session: only the new input is sent, the agent
        keeps the memory (its earlier answers are its own, not replayed). The fixed earlier
        user turns are replayed into the session before the first turn. A retry repeats the
        turn in the same session: starting afresh would lose the turns before it."""

        def turn() -> TargetResponse:
            prior: list[AgentReply] = []
            if session.position == 1:
                prior = [
                    self._ask(session.id, t.content) for t in session.prior if t.role == "user"
                ]
            return self._response(self._ask(session.id, case.question), prior)

        return self._retrying(turn)

    def _retrying(self, call: Callable[[], TargetResponse]) -> TargetResponse:
        """``call`` again on a retryable mid-stream error, within the retry budget."""
        # Full jitter: the agent's throttle is shared by every case of the run.
        clock = retry_policy(self.options, base=self.backoff_base_s, jitter=True).start()
        attempt = 0
        while True:
            attempt += 1
            try:
                return call()
            except AgentStreamError as exc:
                if not exc.retryable:
                    raise
                wait = clock.next_wait(attempt)
                if wait is None:
                    raise AgentStreamError(
                        f"{exc.message} Gave up after {attempt} attempt(s) "
                        f"(max_retries={self.retries}, "
                        f"total_timeout_seconds={self.budget:g}).",
                        retryable=True,
                    ) from exc
                time.sleep(wait)

    def _converse(self, case: TestCase) -> TargetResponse:
        """Replay the case's user turns in one session, then ask; a retry starts afresh."""
        session_id = str(uuid.uuid4())
        # the agent's own replies are regenerated, not injected
        earlier = [self._ask(session_id, t.content) for t in case.conversation if t.role == "user"]
        return self._response(self._ask(session_id, case.question), earlier)

    def _response(self, reply: AgentReply, earlier: list[AgentReply]) -> TargetResponse:
        """The answer to the last input, with the tokens of the inputs replayed before it."""
        input_tokens: int | None = None
        output_tokens: int | None = None
        for before in earlier:
            input_tokens = _add(input_tokens, before.input_tokens)
            output_tokens = _add(output_tokens, before.output_tokens)
        if reply.failure and not reply.text:
            raise TargetError(f"{self._what} failed: {reply.failure}")
        cited = bool(reply.cited_contexts or reply.cited_documents)
        return TargetResponse(
            answer=reply.text,
            contexts=_dedupe(reply.cited_contexts if cited else reply.looked_up_contexts),
            documents=_dedupe(reply.cited_documents if cited else reply.looked_up_documents),
            tool=", ".join(_dedupe(reply.tools)) or None,
            steps=reply.steps,
            input_tokens=_add(input_tokens, reply.input_tokens),
            output_tokens=_add(output_tokens, reply.output_tokens),
        )

    def _ask(self, session_id: str, text: str) -> AgentReply:
        started = time.monotonic()
        params: dict[str, Any] = {
            "agentId": self.agent_id,
            "agentAliasId": self.alias_id,
            "sessionId": session_id,
            "inputText": text,
            "enableTrace": self.enable_trace,
        }
        if self.session_attributes:
            params["sessionState"] = {"sessionAttributes": self.session_attributes}
        permission = (
            f"bedrock:InvokeAgent on arn:aws:bedrock:{self.region}:<account>:agent-alias/"
            f"{self.agent_id}/{self.alias_id}"
        )
        with aws_errors(
            f"Invoking {self._what}",
            timeout=self.timeout,
            region=self.region,
            permission=permission,
        ):
            response = self.client.invoke_agent(**params)
            return read_completion(
                response["completion"],
                self._what,
                deadline=started + self.timeout,
                timeout=self.timeout,
                max_bytes=self.max_bytes,
            )


def _add(total: int | None, value: int | None) -> int | None:
    if value is None:
        return total
    return (total or 0) + value


def _dedupe(items: list[str]) -> list[str]:
    return list(dict.fromkeys(items))
