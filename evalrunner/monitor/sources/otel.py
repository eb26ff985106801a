"""OpenTelemetry GenAI spans exported as OTLP JSON: one interaction per trace.

Follows the GenAI semantic conventions of OpenTelemetry semconv v1.41.0 (the last release
before they moved to open-telemetry/semantic-conventions-genai; status Development), and
reads what instrumentations emit by default under v1.36.0 and before, so both kinds of
exporter work:

- a file is an OTLP ``ExportTraceServiceRequest`` in JSON (``{"resourceSpans": [...]}``), or
  one such object per line (the collector's file exporter);
- the spans of a trace with a ``gen_ai.operation.name`` make one interaction, id the
  ``traceId``, time the end of its last span, session ``gen_ai.conversation.id`` (or
  ``session.id``);
- question: the last user message given to the ``invoke_agent`` span, else to the first
  inference span (``chat``, ``text_completion``, ``generate_content``); answer: the last
  assistant message of the ``invoke_agent`` span, else of the last inference span. Messages
  are read from ``gen_ai.input.messages`` / ``gen_ai.output.messages`` (v1.37+: ``{"role",
  "parts": [{"type": "text", "content"}]}``), else from the span events
  ``gen_ai.user.message`` / ``gen_ai.choice`` (v1.28–v1.36), ``gen_ai.content.prompt`` /
  ``gen_ai.content.completion`` (v1.26–v1.27), else the indexed attributes
  ``gen_ai.prompt.N.content`` / ``gen_ai.completion.N.content``;
- contexts: the ``content`` of each document in ``gen_ai.retrieval.documents`` of the
  trace's ``retrieval`` spans; steps: each ``retrieval`` span (a knowledge-base step named
  ``gen_ai.data_source.id``, its query ``gen_ai.retrieval.query.text``) and ``execute_tool``
  span (``gen_ai.tool.name``, ``gen_ai.tool.call.arguments`` / ``.result``; a span with
  error status is a failed step), in start order.

A trace's spans may be cut across files or export batches: every file of a run is read
before the spans are grouped by ``traceId``, so one trace is one interaction (its id the
``traceId`` however it was split; its origin the file and line of its first span). A trace
whose root span (no ``parentSpanId``) is not among them is read as incomplete
(``Interaction.complete``): the watermark keeps it pending for a later run, up to the
allowed lateness, so pieces exported across schedules are scored once, together; its
first piece is looked for at most a day (:data:`MAX_TRACE_NANOS`) before its newest span.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from evalrunner.monitor.model import Interaction, RecordProblem, SourceRead
from evalrunner.monitor.sources.base import (
    BadField,
    Source,
    register_source,
    timestamp,
)
from evalrunner.targets.steps import MAX_STEP_TEXT, MAX_STEPS, AgentStep

INFERENCE = ("chat", "text_completion", "generate_content")
AGENT = ("invoke_agent", "invoke_workflow")
#: How far back before its newest span a trace's first piece is looked for while it is
#: pending (its files are read again from then): a day, so a span claiming to start in 1970
#: does not make every run read every file the prefix ever held.
MAX_TRACE_NANOS = 86_400 * 10**9


def any_value(value: Any) -> Any:
    """An OTLP JSON ``AnyValue`` as a Python value."""
    if not isinstance(value, Mapping):
        return value
    if "stringValue" in value:
        return value["stringValue"]
    if "intValue" in value:
        try:
            return int(value["intValue"])
        except (TypeError, ValueError):
            return None
    for key in ("doubleValue", "boolValue", "bytesValue"):
        if key in value:
            return value[key]
    if "arrayValue" in value:
        return [any_value(v) for v in (value["arrayValue"] or {}).get("values") or ()]
    if "kvlistValue" in value:
        return attributes((value["kvlistValue"] or {}).get("values") or ())
    return None


def attributes(items: Any) -> dict[str, Any]:
    """OTLP ``[{"key", "value"}]`` as a dict."""
    found: dict[str, Any] = {}
    if not isinstance(items, list):
        return found
    for item in items:
        if isinstance(item, Mapping) and isinstance(item.get("key"), str):
            found[item["key"]] = any_value(item.get("value"))
    return found


@dataclass
class _Span:
    file: str
    line: int | None
    trace: str
    start: int
    end: int
    attrs: dict[str, Any]
    events: list[tuple[str, dict[str, Any]]]
    failed: bool
    #: no parent span: the trace's root, exported last (a parent ends after its children)
    root: bool
    operation: str | None = field(init=False)

    def __post_init__(self) -> None:
        op = self.attrs.get("gen_ai.operation.name")
        self.operation = op if isinstance(op, str) else None


@register_source
class OtelSource(Source):
    """OTLP JSON traces with OpenTelemetry GenAI spans."""

    name = "otel"
    joins_files = True
    summary = "OpenTelemetry GenAI spans as OTLP JSON (resourceSpans), one interaction per trace"

    def read(self, file: str, text: str) -> SourceRead:
        return self.read_all([(file, text)])

    def read_all(self, files: Sequence[tuple[str, str]]) -> SourceRead:
        read = SourceRead(files=len(files))
        spans: list[_Span] = []
        for file, text in files:
            for line, payload in _payloads(file, text, read):
                try:
                    spans.extend(_spans(payload, file, line))
                except BadField as exc:
                    read.problems.append(
                        RecordProblem(file=file, line=line, field=exc.field, message=exc.message)
                    )
        traces: dict[str, list[_Span]] = {}
        for span in spans:
            traces.setdefault(span.trace, []).append(span)
        for trace_id, members in traces.items():
            if not any(s.operation for s in members):
                continue  # no GenAI span: application spans around the assistant
            members.sort(key=lambda s: s.start)
            file, line = members[0].file, members[0].line
            for span in members:  # the first line of that file with the trace's spans
                if span.file == file and span.line is not None:
                    line = span.line if line is None else min(line, span.line)
            try:
                read.interactions.append(self._interaction(file, line, trace_id, members))
            except BadField as exc:
                read.problems.append(
                    RecordProblem(
                        file=file,
                        line=line,
                        field=exc.field,
                        message=f"trace {trace_id}: {exc.message}",
                    )
                )
        return read

    def _interaction(
        self, file: str, line: int | None, trace_id: str, spans: list[_Span]
    ) -> Interaction:
        agents = [s for s in spans if s.operation in AGENT]
        calls = [s for s in spans if s.operation in INFERENCE]
        question = _first(_last_text(_inputs(s), "user") for s in [*agents, *calls])
        answer = _first(_last_text(_outputs(s), "assistant") for s in [*agents, *reversed(calls)])
        missing: BadField | None = None
        if question is None:
            missing = BadField(
                "gen_ai.input.messages", "no user message in the trace's GenAI spans"
            )
        elif answer is None:
            missing = BadField("gen_ai.output.messages", "no assistant answer in the trace's spans")
        complete = any(s.root for s in spans)
        if missing is not None and complete:
            raise missing
        contexts: list[str] = []
        steps: list[AgentStep] = []
        for span in spans:
            if span.operation == "retrieval":
                documents = _json(span.attrs.get("gen_ai.retrieval.documents"))
                texts = [
                    d["content"]
                    for d in (documents if isinstance(documents, list) else [])
                    if isinstance(d, Mapping) and isinstance(d.get("content"), str)
                ]
                contexts.extend(texts)
                steps.append(
                    AgentStep(
                        kind="knowledge_base",
                        name=str(span.attrs.get("gen_ai.data_source.id") or "retrieval"),
                        arguments={"query": span.attrs.get("gen_ai.retrieval.query.text")},
                        output=f"{len(documents) if isinstance(documents, list) else 0} "
                        "document(s)",
                        failed=span.failed,
                    )
                )
            elif span.operation == "execute_tool":
                arguments = _json(span.attrs.get("gen_ai.tool.call.arguments"))
                result = span.attrs.get("gen_ai.tool.call.result")
                steps.append(
                    AgentStep(
                        name=str(span.attrs.get("gen_ai.tool.name") or "tool"),
                        arguments=(
                            dict(arguments)
                            if isinstance(arguments, Mapping)
                            else ({"value": arguments} if arguments is not None else {})
                        ),
                        output=None if result is None else _cut(result),
                        failed=span.failed,
                        error=str(span.attrs.get("error.type")) if span.failed else None,
                    )
                )
        newest = max(s.end for s in spans)
        session = _first(
            s.attrs.get("gen_ai.conversation.id") or s.attrs.get("session.id") for s in spans
        )
        return Interaction(
            id=trace_id,
            id_kind="record",
            question=question or "",
            answer=answer or "",
            contexts=contexts,
            steps=steps[:MAX_STEPS],
            session=str(session) if session is not None else None,
            timestamp=timestamp(newest, "endTimeUnixNano"),
            origin=f"{file}:{line}" if line is not None else file,
            source=self.name,
            complete=complete,
            started_at=timestamp(
                max(min(s.start for s in spans), newest - MAX_TRACE_NANOS), "startTimeUnixNano"
            ),
            # a piece without the question or answer yet (they come with the root): it waits,
            # and is this problem if it is still without them when it stops waiting
            unreadable=None
            if missing is None
            else RecordProblem(
                file=file,
                line=line,
                field=missing.field,
                message=f"trace {trace_id}: {missing.message}",
            ),
        )


def _payloads(file: str, text: str, read: SourceRead) -> Iterable[tuple[int | None, Any]]:
    """The whole file as one OTLP object, else one per line (the file exporter)."""
    try:
        return [(None, json.loads(text))]
    except ValueError:
        pass
    found: list[tuple[int | None, Any]] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            found.append((number, json.loads(line)))
        except ValueError as exc:
            read.problems.append(
                RecordProblem(file=file, line=number, message=f"not valid JSON ({exc})")
            )
    return found


def _spans(payload: Any, file: str, line: int | None) -> list[_Span]:
    if not isinstance(payload, Mapping) or not isinstance(payload.get("resourceSpans"), list):
        raise BadField("resourceSpans", "not an OTLP JSON trace export (no resourceSpans list)")
    spans = []
    for resource in payload["resourceSpans"]:
        for scope in (resource or {}).get("scopeSpans") or ():
            for raw in (scope or {}).get("spans") or ():
                if not isinstance(raw, Mapping):
                    raise BadField("spans", "a span that is not an object")
                trace = raw.get("traceId")
                if not isinstance(trace, str) or not trace:
                    raise BadField("traceId", "a span without its traceId")
                try:
                    # a span without its start starts at its end (not 1970: a pending trace's
                    # files are read again from its first span's start)
                    end = int(raw.get("endTimeUnixNano") or raw.get("startTimeUnixNano") or 0)
                    start = int(raw.get("startTimeUnixNano") or end)
                except (TypeError, ValueError):
                    raise BadField("endTimeUnixNano", "not a number of nanoseconds") from None
                events = [
                    (str(e.get("name")), attributes(e.get("attributes")))
                    for e in raw.get("events") or ()
                    if isinstance(e, Mapping)
                ]
                status = raw.get("status") or {}
                failed = status.get("code") in (2, "STATUS_CODE_ERROR")
                spans.append(
                    _Span(
                        file,
                        line,
                        trace,
                        start,
                        end,
                        attributes(raw.get("attributes")),
                        events,
                        failed,
                        not raw.get("parentSpanId"),
                    )
                )
    return spans


def _json(value: Any) -> Any:
    if isinstance(value, str) and value.strip()[:1] in ("[", "{"):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def _cut(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    return text[:MAX_STEP_TEXT]


def _message_text(message: Any) -> str | None:
    """The text of one message: v1.37+ ``parts``, or an older ``content``."""
    if not isinstance(message, Mapping):
        return message if isinstance(message, str) else None
    parts = message.get("parts")
    if isinstance(parts, list):
        texts = [
            str(p["content"])
            for p in parts
            if isinstance(p, Mapping)
            and p.get("type") == "text"
            and isinstance(p.get("content"), str)
        ]
        return "".join(texts) or None
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # [{"text": ...}]
        blocks = [c.get("text") for c in content if isinstance(c, Mapping)]
        return "".join(t for t in blocks if isinstance(t, str)) or None
    inner = message.get("message")
    return _message_text(inner) if inner is not None else None


def _inputs(span: _Span) -> list[tuple[str, str | None]]:
    """(role, text) of the messages a span was given, newest convention first."""
    messages = _json(span.attrs.get("gen_ai.input.messages"))
    if isinstance(messages, list):
        return [
            (str(m.get("role", "user")), _message_text(m))
            for m in messages
            if isinstance(m, Mapping)
        ]
    found = []
    for name, attrs in span.events:
        if name == "gen_ai.user.message":
            found.append(("user", _message_text(_json(attrs.get("content")))))
        elif name == "gen_ai.content.prompt":
            prompt = _json(attrs.get("gen_ai.prompt"))
            if isinstance(prompt, list):
                found.extend(
                    (str(m.get("role", "user")), _message_text(m))
                    for m in prompt
                    if isinstance(m, Mapping)
                )
            elif isinstance(prompt, str):
                found.append(("user", prompt))
    if found:
        return found
    return _indexed(span.attrs, "gen_ai.prompt", "user")


def _outputs(span: _Span) -> list[tuple[str, str | None]]:
    messages = _json(span.attrs.get("gen_ai.output.messages"))
    if isinstance(messages, list):
        return [
            (str(m.get("role", "assistant")), _message_text(m))
            for m in messages
            if isinstance(m, Mapping)
        ]
    found = []
    for name, attrs in span.events:
        if name == "gen_ai.choice":
            found.append(("assistant", _message_text(_json(attrs.get("message")) or attrs)))
        elif name == "gen_ai.content.completion":
            completion = _json(attrs.get("gen_ai.completion"))
            if isinstance(completion, list):
                found.extend(("assistant", _message_text(m)) for m in completion)
            elif isinstance(completion, str):
                found.append(("assistant", completion))
    if found:
        return found
    return _indexed(span.attrs, "gen_ai.completion", "assistant")


def _indexed(attrs: Mapping[str, Any], prefix: str, role: str) -> list[tuple[str, str | None]]:
    """``gen_ai.prompt.0.content`` / ``.role`` (the pre-1.26 flattened attributes)."""
    found = []
    index = 0
    while f"{prefix}.{index}.content" in attrs:
        content = attrs[f"{prefix}.{index}.content"]
        found.append(
            (
                str(attrs.get(f"{prefix}.{index}.role", role)),
                content if isinstance(content, str) else None,
            )
        )
        index += 1
    return found


def _last_text(messages: list[tuple[str, str | None]], role: str) -> str | None:
    for who, text in reversed(messages):
        if who == role and text and text.strip():
            return text
    return None


def _first(values: Iterable[Any]) -> Any:
    for value in values:
        if value is not None and value != "":
            return value
    return None
