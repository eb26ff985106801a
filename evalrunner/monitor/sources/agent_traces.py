"""Amazon Bedrock agent traces: what an ``InvokeAgent`` call streamed, logged one call per
line (JSON Lines, optionally gzip)::

    {"requestId": "…", "sessionId": "…", "inputText": "How many days of leave…?",
     "timestamp": "2026-01-31T12:00:00Z",
     "completion": [{"trace": {"agentId": "…", "sessionId": "…",
                               "trace": {"orchestrationTrace": {…}}}},
                    {"chunk": {"bytes": "You get 25 days…", "attribution": {…}}}]}

``completion`` (or ``events``) holds the response stream's events as InvokeAgent returns
them (``chunk`` bytes as text, since JSON carries no bytes). They are read by the very code
the Bedrock agent target reads a live stream with
(:func:`evalrunner.targets.bedrock_agent.read_completion`), so the mapping is the target's:
answer the chunks joined; contexts the cited references (``attribution.citations``), else the
references of the trace's knowledge-base lookups (``knowledgeBaseLookupOutput``); steps the
orchestration trace's action-group calls, knowledge-base lookups and collaborator hand-overs.
id ``requestId`` (else a content hash), session ``sessionId``, time ``timestamp`` (else the
latest ``eventTime`` of the trace events).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from evalrunner.errors import EvalRunnerError
from evalrunner.monitor.model import Interaction, SourceRead, content_id
from evalrunner.monitor.sources.base import (
    BadField,
    Source,
    json_lines,
    per_record,
    register_source,
    required_text,
    text_of,
    timestamp,
)
from evalrunner.targets.bedrock_agent import read_completion


@register_source
class AgentTraceSource(Source):
    """Logged InvokeAgent calls with their trace events."""

    name = "bedrock-agent-traces"
    summary = "Amazon Bedrock agent InvokeAgent calls with their trace events, one per line"

    def read(self, file: str, text: str) -> SourceRead:
        return per_record(file, json_lines(file, text), self.build)

    def build(self, record: Any, origin: str) -> Interaction:
        if not isinstance(record, Mapping):
            raise BadField(None, "not a JSON object")
        question = required_text(record.get("inputText"), "inputText")
        events = record.get("completion", record.get("events"))
        if not isinstance(events, list) or not all(isinstance(e, Mapping) for e in events):
            raise BadField("completion", "give the InvokeAgent stream's events as a list")
        try:
            reply = read_completion([dict(e) for e in events], f"logged call at {origin}")
        except EvalRunnerError as exc:
            raise BadField("completion", f"the stream holds an error: {exc.message}") from None
        if not reply.text.strip():
            reason = f" (the agent failed: {reply.failure})" if reply.failure else ""
            raise BadField("completion", f"no answer text in the chunks{reason}")
        cited = bool(reply.cited_contexts)
        contexts = list(dict.fromkeys(reply.cited_contexts if cited else reply.looked_up_contexts))
        session = text_of(record.get("sessionId"), "sessionId", required=False)
        raw_time = record.get("timestamp")
        if raw_time in (None, ""):
            times = [
                (e.get("trace") or {}).get("eventTime")
                for e in events
                if isinstance(e.get("trace"), Mapping)
            ]
            raw_time = max((t for t in times if isinstance(t, str)), default=None)
        when = timestamp(raw_time)
        own = text_of(record.get("requestId"), "requestId", required=False)
        return Interaction(
            id=own or content_id(self.name, question, reply.text, when, session, contexts),
            id_kind="record" if own else "content",
            question=question,
            answer=reply.text,
            contexts=contexts,
            steps=reply.steps,
            session=session,
            timestamp=when,
            origin=origin,
            source=self.name,
        )
