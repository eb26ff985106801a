"""Normalise whatever a target sends back into a :class:`TargetResponse`.

Targets are other teams' systems, and their payloads were designed before anyone thought of
evaluating them. So the defaults here accept the shapes seen in practice (plain dicts with
alternative key names, API-Gateway proxy responses, Step Functions Lambda-task envelopes, JSON
strings, bare strings, OpenAI/Converse-like bodies) without configuration, a JMESPath mapping
in the event overrides any field, and when no answer can be found the error lists what the
payload did contain and how to map it, instead of scoring an empty answer.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import jmespath
from jmespath.exceptions import JMESPathError

from evalrunner.errors import ConfigError, TargetError
from evalrunner.http_client import snippet
from evalrunner.retry import is_retryable_status
from evalrunner.targets.base import TargetResponse
from evalrunner.targets.steps import steps_from_json, tool_names

#: Where an answer may live, by priority within one object.
ANSWER_KEYS = (
    "answer",
    "output",
    "response",
    "text",
    "completion",
    "result",
    "generated_text",
    "content",
    "message",
)
#: Keys whose dict value wraps the real record (``{"data": {"answer": ...}}``).
WRAPPER_KEYS = ("data", "body", "Payload", *ANSWER_KEYS)
_WRAPPER_RANK = {key: rank for rank, key in enumerate(WRAPPER_KEYS)}
#: Where retrieved chunks may live, by priority: the first key present wins.
CONTEXT_KEYS = (
    "contexts",
    "retrieved_contexts",
    "context",
    "citations",
    "sources",
    "source_documents",
    "retrievedReferences",
    "references",
)
DOCUMENT_KEYS = ("documents", "document_ids", "retrieved_documents", "doc_ids")
#: Fields of a context object holding its text / naming its document.
TEXT_FIELDS = ("text", "content", "page_content", "chunk", "snippet", "passage")
DOCUMENT_FIELDS = (
    "document",
    "source",
    "uri",
    "url",
    "location",
    "document_id",
    "doc_id",
    "title",
)
TOOL_KEYS = ("tool", "tool_name", "toolName", "tool_used", "tools", "tool_calls")
INTENT_KEYS = ("intent", "intent_name", "intentName", "detected_intent")
INPUT_TOKEN_KEYS = ("input_tokens", "prompt_tokens", "inputTokens", "promptTokens")
OUTPUT_TOKEN_KEYS = ("output_tokens", "completion_tokens", "outputTokens", "completionTokens")
COST_KEYS = ("cost", "cost_usd", "total_cost")
MAPPING_FIELDS = (
    "answer_path",
    "contexts_path",
    "documents_path",
    "tool_path",
    "intent_path",
    "steps_path",
)

_MAX_DEPTH = 6


@dataclass(frozen=True)
class ResponseMapping:
    """The event's JMESPath overrides, compiled once per target rather than once per case."""

    expressions: Mapping[str, Any]

    @classmethod
    def from_spec(cls, spec: Mapping[str, Any]) -> ResponseMapping:
        compiled: dict[str, Any] = {}
        for field in MAPPING_FIELDS:
            expression = spec.get(field)
            if expression is None:
                continue
            try:
                compiled[field] = jmespath.compile(expression)
            except JMESPathError as exc:
                raise ConfigError(
                    f"target.{field} {expression!r} is not a valid JMESPath expression: {exc}. "
                    'See https://jmespath.org/tutorial.html (e.g. "data.reply").'
                ) from exc
        return cls(compiled)

    def __bool__(self) -> bool:
        return bool(self.expressions)

    def search(self, field: str, layers: list[Any]) -> Any:
        """Search the innermost payload first, then its envelopes.

        Users write paths against the body they know; the envelope they may or may not have
        looked at (API Gateway, a Lambda task's ``Payload``) should not break the path.
        """
        expression = self.expressions.get(field)
        if expression is None:
            return None
        for layer in reversed(layers):
            if isinstance(layer, dict | list):
                value = expression.search(layer)
                if value is not None:
                    return value
        return None


def normalise(
    payload: Any,
    mapping: ResponseMapping | Mapping[str, str] | None = None,
    *,
    source: str = "the target",
) -> TargetResponse:
    """Turn a raw payload (dict, list, JSON text, bytes, bare string) into a TargetResponse.

    ``source`` names the target in error messages ("Lambda function qa-bot").
    Contexts and documents are deduplicated in order: Bedrock-style citations repeat the same
    reference once per cited span, which would otherwise skew per-chunk retrieval metrics.
    Raises TargetError for an API-Gateway error status or when no answer can be found.
    """
    if mapping is not None and not isinstance(mapping, ResponseMapping):
        mapping = ResponseMapping.from_spec(mapping)
    layers = _unwrap(payload, source)
    root = layers[-1]

    if isinstance(root, str) and not (mapping and "answer_path" in mapping.expressions):
        if not root.strip():
            raise TargetError(f"{source} returned an empty response (no answer).")
        return TargetResponse(answer=root)

    records = _records(root)
    answer = _mapped_answer(mapping, layers, source) if mapping else None
    if answer is None:
        answer = _default_answer(records)
    if answer is None:
        raise TargetError(_no_answer_message(root, source))

    contexts, documents = _default_contexts(records)
    if mapping and "contexts_path" in mapping.expressions:
        contexts, documents = [], []
        _collect_contexts(mapping.search("contexts_path", layers), contexts, documents)
    if mapping and "documents_path" in mapping.expressions:
        documents = []
        _collect_documents(mapping.search("documents_path", layers), documents)
    steps = steps_from_json(mapping.search("steps_path", layers)) if mapping else []
    tool = _mapped_label(mapping, "tool_path", layers) if mapping else None
    if tool is None and steps:
        tool = ", ".join(dict.fromkeys(tool_names(steps))) or None
    intent = _mapped_label(mapping, "intent_path", layers) if mapping else None
    input_tokens, output_tokens, cost, latency = _usage(records)
    # Raw reported numbers go through the model's validation (distrust_numbers rounds token
    # counts and drops what is not sane), hence model_validate rather than the constructor.
    return TargetResponse.model_validate(
        {
            "answer": answer,
            "contexts": _dedupe(contexts),
            "documents": _dedupe(documents),
            "tool": tool if tool is not None else _find_label(records, TOOL_KEYS),
            "intent": intent if intent is not None else _find_label(records, INTENT_KEYS),
            "steps": steps,
            "latency_ms": latency,
            "input_tokens": input_tokens,
            "output_tokens": output_tokens,
            "cost": cost,
        }
    )


# ---------------------------------------------------------------------------------- envelopes


def _parse_text(text: str) -> Any:
    """JSON if the text is JSON, else the text itself (a bare answer)."""
    stripped = text.strip()
    if stripped[:1] in ("{", "[", '"') or stripped in ("null", "true", "false"):
        try:
            return json.loads(stripped)
        except ValueError:
            return text
    return text


def _unwrap(payload: Any, source: str) -> list[Any]:
    """Peel bytes, JSON text and known envelopes; return every layer, outermost first."""
    layers: list[Any] = []
    current = payload
    for _ in range(_MAX_DEPTH):
        if isinstance(current, bytes | bytearray):
            current = bytes(current).decode("utf-8", errors="replace")
        if isinstance(current, str):
            parsed = _parse_text(current)
            if parsed is None:  # a function that returned None/null has no answer
                current = None
            if parsed is current or not isinstance(parsed, dict | list | str):
                break
            current = parsed
            continue
        if isinstance(current, dict) and _is_api_gateway(current):
            layers.append(current)
            _check_status(current, source)
            current = current.get("body")
            if current is None:
                current = ""
            continue
        if isinstance(current, dict) and "statusCode" in current:
            # {"statusCode": 500, "error": ...}: an error status counts even without a body.
            _check_status(current, source, strict=False)
        if isinstance(current, dict) and _is_lambda_task_output(current):
            layers.append(current)
            current = current["Payload"]
            continue
        break
    layers.append(current)
    return layers


def _is_api_gateway(obj: dict[str, Any]) -> bool:
    return "statusCode" in obj and "body" in obj


def _is_lambda_task_output(obj: dict[str, Any]) -> bool:
    """Step Functions' ``arn:aws:states:::lambda:invoke`` result when no OutputPath is set."""
    return "Payload" in obj and ("StatusCode" in obj or "ExecutedVersion" in obj)


def _check_status(obj: dict[str, Any], source: str, *, strict: bool = True) -> None:
    """Raise for a non-2xx ``statusCode``; ``strict`` also rejects one that is not a number."""
    status: Any = obj.get("statusCode")  # anything a payload holds; int() decides below
    try:
        code = int(status)
    except (TypeError, ValueError):
        if not strict:
            return
        raise TargetError(
            f"{source} returned an API-Gateway-shaped response with a non-numeric statusCode "
            f"{status!r}."
        ) from None
    if not 200 <= code < 300:
        rest = obj.get("body", {k: v for k, v in obj.items() if k != "statusCode"})
        text = rest if isinstance(rest, str | bytes) else json.dumps(rest, default=str)
        raise TargetError(
            f"{source} answered with statusCode {code}: {snippet(text)}",
            retryable=is_retryable_status(code),
        )


# ------------------------------------------------------------------------------------ records


def _records(root: Any) -> list[dict[str, Any]]:
    """The root dict and the dicts nested under wrapper keys, outermost first."""
    records: list[dict[str, Any]] = []
    # [{"generated_text": ...}] (Hugging Face style): one result in a list.
    if isinstance(root, list) and len(root) == 1 and isinstance(root[0], dict):
        root = root[0]
    frontier = [root]
    for _ in range(_MAX_DEPTH):
        next_frontier: list[Any] = []
        for obj in frontier:
            if not isinstance(obj, dict) or any(obj is r for r in records):
                continue
            records.append(obj)
            choices = obj.get("choices")
            if isinstance(choices, list) and choices and isinstance(choices[0], dict):
                next_frontier.append(choices[0])
            # the keys this dict has, in WRAPPER_KEYS order (a reply has a few keys, not 12)
            for key in sorted((k for k in obj if k in _WRAPPER_RANK), key=_WRAPPER_RANK.get):
                value = obj[key]
                if isinstance(value, str) and key in ("body", "Payload"):
                    value = _parse_text(value)
                if isinstance(value, dict):
                    next_frontier.append(value)
        if not next_frontier:
            break
        frontier = next_frontier
    return records


def _as_answer(value: Any) -> str | None:
    if isinstance(value, str):
        return value
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int | float):
        return str(value)
    if isinstance(value, list) and value:
        # Content blocks: ["...", ...] or [{"type": "text", "text": "..."}, ...]
        parts = [
            item if isinstance(item, str) else item.get("text") if isinstance(item, dict) else None
            for item in value
        ]
        if all(isinstance(p, str) for p in parts):
            return "\n".join(p for p in parts if p is not None)
    return None


def _default_answer(records: list[dict[str, Any]]) -> str | None:
    for record in records:
        for key in ANSWER_KEYS:
            if key in record:
                answer = _as_answer(record[key])
                if answer is not None:
                    return answer
    return None


def _mapped_answer(mapping: ResponseMapping, layers: list[Any], source: str) -> str | None:
    if "answer_path" not in mapping.expressions:
        return None
    value = mapping.search("answer_path", layers)
    answer = _as_answer(value)
    if answer is None and isinstance(value, dict):
        answer = _default_answer(_records(value))
    if answer is None:
        root = layers[-1]
        raise TargetError(
            f"answer_path selected {_json_kind(value)} in the response of {source}; "
            f"{_describe(root)}. {_answer_path_fix(root, 'Fix')}"
        )
    return answer


def _json_kind(value: Any) -> str:
    """What a JSON value is, in words (never a Python type name)."""
    if value is None:
        return "nothing"
    if isinstance(value, bool):
        return "a true/false value"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "text"
    if isinstance(value, list):
        return f"a list of {len(value)} item(s)"
    return "an object" if isinstance(value, dict) else "a value"


def _describe(root: Any) -> str:
    if isinstance(root, dict):
        keys = [json.dumps(snippet(str(k), 40)) for k in sorted(root, key=str)]
        shown = ", ".join(keys[:20]) + (f" and {len(keys) - 20} more" if len(keys) > 20 else "")
        return f"its keys are {shown}" if keys else "it is an empty object"
    if isinstance(root, list):
        return f"it is a JSON list of {len(root)} item(s)"
    return f"it is {_json_kind(root)}: {snippet(json.dumps(root, default=str), 80)}"


#: Keys that name an answer in the wild, besides :data:`ANSWER_KEYS`: a leaf under one of
#: them is the better guess for ``answer_path``.
_ANSWERISH = (*ANSWER_KEYS, "reply", "answer_text", "msg", "generation", "output_text", "data")


def _path_part(key: str) -> str:
    """One key of a JMESPath: bare when it is an identifier, else quoted."""
    if key.isidentifier() and key.isascii():
        return key
    return json.dumps(key)


def _string_leaves(value: Any, path: str, depth: int, out: list[tuple[str, str, str]]) -> None:
    """(JMESPath, last key, text) of every string in ``value``, a few levels deep."""
    if depth > 6 or len(out) > 200:
        return
    if isinstance(value, str):
        key = path.rsplit(".", 1)[-1].split("[", 1)[0].strip('"')
        out.append((path, key, value))
    elif isinstance(value, dict):
        for key, item in value.items():
            part = _path_part(str(key))
            _string_leaves(item, f"{path}.{part}" if path else part, depth + 1, out)
    elif isinstance(value, list):
        for index, item in enumerate(value[:5]):
            _string_leaves(item, f"{path}[{index}]", depth + 1, out)


def suggest_answer_path(root: Any) -> str | None:
    """The JMESPath of the likeliest answer in a response: a text under an answer-like key
    (reply, text, content, ...), else the longest text; None when the response holds none."""
    leaves: list[tuple[str, str, str]] = []
    _string_leaves(root, "", 0, leaves)
    leaves = [leaf for leaf in leaves if leaf[0] and leaf[2].strip()]
    if not leaves:
        return None
    answerish = [leaf for leaf in leaves if leaf[1].lower() in _ANSWERISH]
    return max(answerish or leaves, key=lambda leaf: len(leaf[2]))[0]


def _answer_path_fix(root: Any, verb: str = "Set") -> str:
    """The fix, written in full: ``"answer_path": "<path>"`` from the response's own keys."""
    path = suggest_answer_path(root)
    if path is None:
        return (
            f"{verb} target.answer_path to a JMESPath expression that selects the answer, "
            'e.g. "answer_path": "data.reply".'
        )
    return (
        f"{verb} target.answer_path to the JMESPath expression that selects the answer; in "
        f"this response that is probably {json.dumps({'answer_path': path})[1:-1]}."
    )


def _no_answer_message(root: Any, source: str) -> str:
    return (
        f"No answer found in the response of {source}: {_describe(root)}. Looked for "
        f"{', '.join(ANSWER_KEYS)}. {_answer_path_fix(root)}"
    )


# ----------------------------------------------------------------------------------- contexts


def _default_contexts(records: list[dict[str, Any]]) -> tuple[list[str], list[str]]:
    contexts: list[str] = []
    documents: list[str] = []
    used_key: str | None = None
    for record in records:
        for key in CONTEXT_KEYS:
            if record.get(key) is not None:
                used_key = key
                _collect_contexts(record[key], contexts, documents)
                break
        if used_key:
            break
    for record in records:
        for key in DOCUMENT_KEYS:
            if record.get(key) is not None:
                _collect_documents(record[key], documents, contexts if not contexts else None)
        # {"contexts": [...], "sources": ["a.pdf"]}: sources name documents, not chunks.
        if used_key not in (None, "sources") and isinstance(record.get("sources"), list):
            _collect_documents(record["sources"], documents)
    return contexts, documents


def _collect_contexts(value: Any, contexts: list[str], documents: list[str]) -> None:
    if value is None:
        return
    if isinstance(value, str):
        contexts.append(value)
        return
    if isinstance(value, dict):
        value = [value]
    if not isinstance(value, Iterable):
        contexts.append(str(value))
        return
    for item in value:
        if isinstance(item, str):
            contexts.append(item)
        elif isinstance(item, dict):
            if isinstance(item.get("retrievedReferences"), list):  # a Bedrock citation
                ctx, docs = bedrock_references(item["retrievedReferences"])
                contexts.extend(ctx)
                documents.extend(docs)
                continue
            text = _text_of(item)
            if text is not None:
                contexts.append(text)
            document = _document_of(item)
            if document is not None:
                documents.append(document)
        elif item is not None:
            contexts.append(str(item))


def _collect_documents(value: Any, documents: list[str], contexts: list[str] | None = None) -> None:
    """Document ids/URIs; ``contexts`` (when given) also takes texts of document objects."""
    if value is None:
        return
    items = [value] if isinstance(value, str | dict) else value
    if not isinstance(items, Iterable):
        documents.append(str(items))
        return
    for item in items:
        if isinstance(item, str):
            documents.append(item)
        elif isinstance(item, dict):
            document = _document_of(item) or _first_str(item, ("id", "name"))
            if document is not None:
                documents.append(document)
            if contexts is not None:
                text = _text_of(item)
                if text is not None:
                    contexts.append(text)
        elif item is not None:
            documents.append(str(item))


def _first_str(obj: Mapping[str, Any], keys: Iterable[str]) -> str | None:
    for key in keys:
        value = obj.get(key)
        if isinstance(value, str) and value:
            return value
    return None


def _text_of(item: dict[str, Any]) -> str | None:
    for field in TEXT_FIELDS:
        value = item.get(field)
        if isinstance(value, str):
            return value
        if isinstance(value, dict):  # {"content": {"text": "..."}} (Bedrock)
            nested = _first_str(value, TEXT_FIELDS)
            if nested is not None:
                return nested
    return None


def _document_of(item: dict[str, Any]) -> str | None:
    for field in DOCUMENT_FIELDS:
        value = item.get(field)
        if isinstance(value, str) and value:
            return value
        if isinstance(value, dict):
            found = location_uri(value) or _first_str(value, ("id", "name", "source"))
            if found:
                return found
    metadata = item.get("metadata")
    if isinstance(metadata, dict):
        return _first_str(
            metadata, ("source", "uri", "url", "document", "x-amz-bedrock-kb-source-uri")
        )
    return None


def location_uri(location: Mapping[str, Any]) -> str | None:
    """A Bedrock ``RetrievalResultLocation`` (or any {uri|url} dict) as one document string.

    Bedrock nests the address under a per-source key (s3Location.uri, webLocation.url,
    confluenceLocation.url, customDocumentLocation.id, sqlLocation.query, ...); the key set
    keeps growing, so any nested dict with uri/url/id is accepted.
    """
    direct = _first_str(location, ("uri", "url"))
    if direct:
        return direct
    for key, value in location.items():
        if key != "type" and isinstance(value, dict):
            found = _first_str(value, ("uri", "url", "id", "query"))
            if found:
                return found
    return None


def bedrock_references(references: Iterable[Any]) -> tuple[list[str], list[str]]:
    """Bedrock ``retrievedReferences`` → (chunk texts, document URIs).

    Shared by agents, knowledge bases and payloads that pass Bedrock citations through.
    """
    contexts: list[str] = []
    documents: list[str] = []
    for reference in references or ():
        if not isinstance(reference, dict):
            continue
        content = reference.get("content") or {}
        text = content.get("text") if isinstance(content, dict) else None
        if text is None and isinstance(content, dict):
            rows = content.get("row")
            if isinstance(rows, list) and rows:
                text = "; ".join(
                    f"{r.get('columnName')}: {r.get('columnValue')}"
                    for r in rows
                    if isinstance(r, dict)
                )
            elif isinstance(content.get("audio"), dict):
                text = content["audio"].get("transcription")
            elif isinstance(content.get("video"), dict):
                text = content["video"].get("summary")
        if isinstance(text, str):
            contexts.append(text)
        location = reference.get("location")
        document = location_uri(location) if isinstance(location, dict) else None
        if document is None and isinstance(reference.get("metadata"), dict):
            document = _first_str(reference["metadata"], ("x-amz-bedrock-kb-source-uri",))
        if document:
            documents.append(document)
    return contexts, documents


# ------------------------------------------------------------------------- tool, intent, usage


def _label(value: Any) -> str | None:
    if isinstance(value, str):
        return value or None
    if isinstance(value, dict):
        function = value.get("function")
        if isinstance(function, dict):  # OpenAI tool_calls[].function.name
            return _first_str(function, ("name",))
        return _first_str(value, ("name", "tool", "intent", "id"))
    if isinstance(value, list):
        names = [name for name in (_label(v) for v in value) if name]
        return ", ".join(dict.fromkeys(names)) or None
    return None


def _find_label(records: list[dict[str, Any]], keys: tuple[str, ...]) -> str | None:
    for record in records:
        if record.keys().isdisjoint(keys):  # the usual reply: no tool, no intent
            continue
        for key in keys:
            label = _label(record.get(key))
            if label:
                return label
    return None


def _mapped_label(mapping: ResponseMapping, field: str, layers: list[Any]) -> str | None:
    if field not in mapping.expressions:
        return None
    return _label(mapping.search(field, layers))


def _number(obj: Mapping[str, Any], keys: tuple[str, ...]) -> float | None:
    for key in keys:
        value = obj.get(key)
        if isinstance(value, int | float) and not isinstance(value, bool):
            return value
    return None


_USAGE_KEYS = frozenset(
    (*INPUT_TOKEN_KEYS, *OUTPUT_TOKEN_KEYS, *COST_KEYS, "latency_ms", "latencyMs")
)


def _usage(
    records: list[dict[str, Any]],
) -> tuple[float | None, float | None, float | None, float | None]:
    input_tokens = output_tokens = cost = latency = None
    for record in records:
        for holder in (record.get("usage"), record.get("metrics"), record):
            if not isinstance(holder, dict) or holder.keys().isdisjoint(_USAGE_KEYS):
                continue
            # raw numbers: TargetResponse drops NaN, Infinity, negatives and absurd values
            # (int() of Infinity would raise and cost the case its answer)
            if input_tokens is None:
                input_tokens = _number(holder, INPUT_TOKEN_KEYS)
            if output_tokens is None:
                output_tokens = _number(holder, OUTPUT_TOKEN_KEYS)
            if cost is None:
                cost = _number(holder, COST_KEYS)
            if latency is None:
                latency = _number(holder, ("latency_ms", "latencyMs"))
    return input_tokens, output_tokens, cost, latency


def _dedupe(items: list[str]) -> list[str]:
    return list(dict.fromkeys(items))
