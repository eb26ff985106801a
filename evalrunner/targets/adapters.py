"""Normalise whatever a target sends back into a :class:`TargetResponse`.

Targets are other teams' systems, and their payloads were designed before anyone thought of
evaluating them. So the defaults here accept the shapes seen in practice (plain dicts with
alternative key names, API-Gateway proxy responses, Step Functions Lambda-task envelopes, JSON
strings, bare strings, OpenAI/Converse-like bodies) without configuration, a JMESPath mapping
in the event overrides any field, and when no answer can be found the error lists what the
payload did contain and how to map it, instead of scoring an empty answer.

The key names looked for are in :mod:`~evalrunner.targets.reply_keys`, the search for
contexts and documents in :mod:`~evalrunner.targets.reply_contexts`, the no-answer error's
description and suggested ``answer_path`` in :mod:`~evalrunner.targets.answer_hints`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import jmespath
from jmespath.exceptions import JMESPathError

from evalrunner.errors import ConfigError, TargetError
from evalrunner.http_client import snippet
from evalrunner.retry import is_retryable_status
from evalrunner.targets.answer_hints import answer_path_fix, describe, json_kind, no_answer_message
from evalrunner.targets.base import TargetResponse
from evalrunner.targets.reply_contexts import (
    collect_contexts,
    collect_documents,
    default_contexts,
    first_str,
)
from evalrunner.targets.reply_keys import (
    ANSWER_KEYS,
    COST_KEYS,
    INPUT_TOKEN_KEYS,
    INTENT_KEYS,
    MAPPING_FIELDS,
    OUTPUT_TOKEN_KEYS,
    TOOL_KEYS,
    WRAPPER_KEYS,
)
from evalrunner.targets.steps import steps_from_json, tool_names

_MAX_DEPTH = 6
_WRAPPER_RANK = {key: rank for rank, key in enumerate(WRAPPER_KEYS)}


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
        raise TargetError(no_answer_message(root, source))

    contexts, documents = default_contexts(records)
    if mapping and "contexts_path" in mapping.expressions:
        contexts, documents = [], []
        collect_contexts(mapping.search("contexts_path", layers), contexts, documents)
    if mapping and "documents_path" in mapping.expressions:
        documents = []
        collect_documents(mapping.search("documents_path", layers), documents)
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
            for key in sorted(
                (k for k in obj if k in _WRAPPER_RANK), key=_WRAPPER_RANK.__getitem__
            ):
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
            f"answer_path selected {json_kind(value)} in the response of {source}; "
            f"{describe(root)}. {answer_path_fix(root, 'Fix')}"
        )
    return answer


# ------------------------------------------------------------------------- tool, intent, usage


def _label(value: Any) -> str | None:
    if isinstance(value, str):
        return value or None
    if isinstance(value, dict):
        function = value.get("function")
        if isinstance(function, dict):  # OpenAI tool_calls[].function.name
            return first_str(function, ("name",))
        return first_str(value, ("name", "tool", "intent", "id"))
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
