"""A responder for :class:`~tests.support.judge_stub.JudgeStub` that behaves like a small GGUF
model behind a local OpenAI-compatible server (issue 19), without a model:

* **structured output per server** (``server``): ``llama-cpp-python`` follows
  ``response_format={"type": "json_object", "schema": ...}`` and answers any other
  ``response_format`` type with HTTP 500 (its error shape, a message that names nothing);
  ``llama-server`` and ``openai`` follow ``json_schema`` (``openai`` rejects unknown types with
  a 400 naming ``response_format``); ``vllm`` follows ``json_schema`` and ``guided_json``;
  ``plain`` ignores every such parameter. A followed schema gives a valid reply that stops at
  its closing brace, as a grammar-constrained model does.
* **no schema, no stop** (``rambles``): unconstrained, the "model" writes its reply and goes
  on writing until ``max_tokens``, or until ``context_tokens`` when the request has no
  ``max_tokens`` (finish_reason "length"). Generation costs ``seconds_per_token`` of delay per
  token (0 by default); the text sent is capped, the tokens counted are not.
* **echo** (``echo_schema``): unconstrained, a prompt that holds a JSON Schema document (an
  object with ``"properties"``) gets that document back, as 70 of 80 replies did.
* **deterministic** (temperature 0): the same request gives the same reply.

Pair it with ``stub.serial = True`` for a server that answers one request at a time and keeps
generating after the client has given up.

What the model "means" to answer comes from ``answer(messages, schema)``; the default,
:func:`fill_in`, fills in the shape it is given (the schema when the server enforces one, else
the example in the prompt) with plausible values, one list entry per item when the prompt says
"with exactly N entries".
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tests.support.judge_stub import StubReply

__all__ = ["LocalModel", "fill_in", "schema_documents"]

EXAMPLE_MARK = "with your own values in place of the placeholders: "
_COUNT = re.compile(r"with exactly (\d+) entries")
#: The text of a reply that goes on after its JSON (a model that does not stop).
FILLER = " and so on"
#: At most this many filler characters are sent (the counted tokens go beyond).
MAX_FILLER_CHARS = 20_000

Answer = Callable[[list[dict[str, Any]], "dict[str, Any] | None"], Any]


def _tokens(text: str) -> int:
    return max(1, len(text) // 4)


def schema_documents(text: str) -> list[dict[str, Any]]:
    """The JSON objects in ``text`` that look like JSON Schema documents."""
    decoder = json.JSONDecoder()
    found: list[dict[str, Any]] = []
    start = text.find("{")
    while start != -1:
        try:
            value, end = decoder.raw_decode(text, start)
        except ValueError:
            start = text.find("{", start + 1)
            continue
        if isinstance(value, dict) and "properties" in value:
            found.append(value)
        start = text.find("{", end)
    return found


def _value(node: Any, name: str, count: int | None) -> Any:
    """A plausible value for a schema ``node`` or an example value."""
    if isinstance(node, dict) and ("type" in node or "properties" in node or "items" in node):
        kind = node.get("type")
        if kind == "object" or "properties" in node:
            return {k: _value(v, k, None) for k, v in (node.get("properties") or {}).items()}
        if kind == "array":
            n = count if count is not None else node.get("minItems", 2)
            return [_value(node.get("items") or {}, name, None) for _ in range(n)]
        if kind == "boolean":
            return True
        if kind in ("integer", "number"):
            return node.get("maximum", 1)
        return f"A plausible {name or 'text'} from the judge."
    if isinstance(node, dict):  # an example object
        return {k: _value(v, k, count if len(node) == 1 else None) for k, v in node.items()}
    if isinstance(node, list):
        n = count if count is not None else 2
        return [_value(node[0] if node else "", name, None) for _ in range(n)]
    if isinstance(node, str):
        return f"A plausible {name or 'text'} from the judge."
    return node


def fill_in(messages: list[dict[str, Any]], schema: dict[str, Any] | None) -> Any:
    """The reply a cooperative model writes: ``schema`` filled in when the server enforces
    one, else the prompt's example filled in; list lengths from "with exactly N entries"."""
    prompt = "\n".join(str(m.get("content", "")) for m in messages)
    counts = _COUNT.findall(prompt)
    count = int(counts[0]) if counts else None
    if schema is not None:
        return _value(schema, "", None)
    for message in messages:
        content = str(message.get("content", ""))
        if EXAMPLE_MARK in content:
            example = json.loads(content.split(EXAMPLE_MARK, 1)[1].split("\n", 1)[0])
            return _value(example, "", count)
    return {"note": "no reply format in the prompt"}


@dataclass
class LocalModel:
    """``JudgeStub.responder`` for a local model server (see the module docstring)."""

    server: str = "llama-cpp-python"
    answer: Answer = fill_in
    rambles: bool = True
    echo_schema: bool = True
    context_tokens: int = 131_072
    seconds_per_token: float = 0.0
    #: What happened, for tests: requests without max_tokens, tokens generated, echoes sent,
    #: and the structured-output parameter of each request (None: none).
    unbounded: int = 0
    generated: int = 0
    echoes: int = 0
    formats: list[str | None] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def _format(self, request: dict[str, Any]) -> tuple[str | None, dict[str, Any] | None]:
        """(the parameter sent, the schema this server enforces from it)."""
        rf = request.get("response_format")
        if isinstance(rf, dict):
            kind = rf.get("type")
            if kind == "json_schema":
                spec = rf.get("json_schema") or {}
                enforced = self.server in ("llama-server", "openai", "vllm")
                return "json_schema", spec.get("schema") if enforced else None
            if kind == "json_object":
                enforced = self.server in ("llama-cpp-python", "llama-server")
                name = "json_object+schema" if "schema" in rf else "json_object"
                return name, rf.get("schema") if enforced else None
            return str(kind), None
        if "guided_json" in request:
            return "guided_json", request["guided_json"] if self.server == "vllm" else None
        return None, None

    def _rejection(self, sent: str | None) -> StubReply | None:
        known = {
            "llama-cpp-python": {None, "json_object", "json_object+schema", "guided_json"},
            "openai": {None, "json_schema", "json_object", "guided_json"},
        }.get(self.server)
        if known is None or sent in known:
            return None
        if self.server == "llama-cpp-python":  # its RouteErrorHandler: 500, names nothing
            error = {
                "message": "'NoneType' object is not subscriptable",
                "type": "internal_server_error",
                "param": None,
                "code": None,
            }
            return StubReply(status=500, body={"error": error})
        return StubReply(f"Invalid value for response_format: {sent}", status=400)

    def __call__(self, messages: list[dict[str, Any]], request: dict[str, Any]) -> StubReply:
        sent, schema = self._format(request)
        with self._lock:
            self.formats.append(sent)
        rejected = self._rejection(sent)
        if rejected is not None:
            return rejected
        budget = request.get("max_tokens") or request.get("max_completion_tokens")
        prompt = "\n".join(str(m.get("content", "")) for m in messages)
        documents = schema_documents(prompt) if schema is None and self.echo_schema else []
        if documents:
            text = json.dumps(documents[0])
            with self._lock:
                self.echoes += 1
        else:
            value = self.answer(messages, schema)
            text = value if isinstance(value, str) else json.dumps(value)
        limit = int(budget) if budget else self.context_tokens
        tokens = _tokens(text)
        finish = "stop"
        if tokens >= limit:  # cut at the budget, mid-JSON
            text, tokens, finish = text[: limit * 4], limit, "length"
        elif schema is None and self.rambles:  # writes on until the budget
            text += (FILLER * ((limit - tokens) * 4 // len(FILLER) + 1))[:MAX_FILLER_CHARS]
            tokens, finish = limit, "length"
        with self._lock:
            self.unbounded += budget is None
            self.generated += tokens
        return StubReply(
            text,
            completion_tokens=tokens,
            finish_reason=finish,
            delay=tokens * self.seconds_per_token,
        )
