"""An OpenAI-compatible judge on loopback that answers every peer's request style, slowly.

For the judge-bound *wall time* side by side (bench/bench_judge_wall.py): evalrunner, DeepEval
and Ragas each talk to this server with their own OpenAI client, exactly as they would talk to
a hosted judge, so each runs its own batch runner, its own concurrency, retries and parsing.

What each sends, and what it gets back (a reply each tool's parser accepts):
- ``response_format: {"type": "json_schema", ...}`` (evalrunner; DeepEval's ``GPTModel``
  through ``beta.chat.completions.parse``): JSON content filled from that schema;
- ``tools`` (an instructor TOOLS client): a tool call whose arguments are filled from the
  first tool's parameters;
- neither (Ragas' legacy prompts, which write "...as specified in JSON Schema:\\n{...}" into
  the prompt text; ``json_object`` mode): JSON filled from the schema found in the prompt,
  or a bare rating ``2`` where the prompt holds no schema (Ragas' NVIDIA templates);
- ``n`` > 1 (Ragas' Answer Relevancy asks for 3 questions in one request): n choices;
- ``/v1/embeddings``: deterministic 64-dimensional vectors from a hash of each text.

The filler is the one of the counting fakes (common.py): every list has
``STATEMENTS_PER_TEXT`` items (within the schema's minItems/maxItems), every verdict is the
favourable one, strings have fixed realistic lengths.

Latency: every chat answer waits ``delay`` ± ``jitter`` seconds (a deterministic function of
the request, so each tool gets the same draw for the same prompt); embeddings answer at once.
``capacity``: answer 429 above that many chat requests in flight (a rate-limited key).
Figures (``stats()``): chat requests, refused, embedding requests and texts, prompt characters
(every message's content) and schema characters (response_format / tools), most in flight.
"""

from __future__ import annotations

import hashlib
import json
import math
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import common

#: Where Ragas' legacy prompts put their output schema.
SCHEMA_MARKER = "JSON Schema:"


def _resolve(node: dict[str, Any], root: dict[str, Any]) -> dict[str, Any]:
    seen = 0
    while "$ref" in node and seen < 20:
        path = node["$ref"].lstrip("#/").split("/")
        target: Any = root
        for part in path:
            target = target[part]
        node = {**target, **{k: v for k, v in node.items() if k != "$ref"}}
        seen += 1
    return node


def fill(node: dict[str, Any], root: dict[str, Any], name: str = "", index: int = 0) -> Any:
    """A value of JSON schema ``node`` as a compliant, favourable judge writes it."""
    node = _resolve(node, root)
    for key in ("anyOf", "oneOf"):
        if key in node:
            options = [o for o in node[key] if _resolve(o, root).get("type") != "null"]
            return fill(options[0] if options else node[key][0], root, name, index)
    if node.get("allOf"):
        return fill(node["allOf"][0], root, name, index)
    if "const" in node:
        return node["const"]
    if "enum" in node:
        values = node["enum"]
        for preferred in ("yes", "Yes", "supported", "relevant", 1, True):
            if preferred in values:
                return preferred
        return values[0]
    kind = node.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "string")
    if kind == "object" or "properties" in node:
        props = node.get("properties") or {}
        return {key: fill(sub, root, key, index) for key, sub in props.items()}
    if kind == "array":
        n = common.STATEMENTS_PER_TEXT
        n = max(n, int(node.get("minItems", 0)))
        if "maxItems" in node:
            n = min(n, int(node["maxItems"]))
        item = node.get("items") or {"type": "string"}
        return [fill(item, root, name.rstrip("s"), i) for i in range(n)]
    lname = name.lower()
    if kind == "boolean":
        return True
    if kind in ("integer", "number"):
        if "maximum" in node:
            value = node["maximum"]
        elif "noncommittal" in lname:
            value = 0
        elif "rating" in lname:
            value = 2
        elif "score" in lname:
            value = 5
        else:
            value = 1
        return int(value) if kind == "integer" else float(value)
    if "reason" in lname or "explanation" in lname or "justification" in lname:
        return common.REASON
    if "question" in lname:
        return common.QUESTION
    if "verdict" in lname:
        return "yes"
    return common.STATEMENT.format(i=index + 1)


def _schema_in_text(text: str) -> dict[str, Any] | None:
    at = text.find(SCHEMA_MARKER)
    if at < 0:
        return None
    start = text.find("{", at)
    if start < 0:
        return None
    try:
        value, _ = json.JSONDecoder().raw_decode(text[start:])
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _content(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, list):  # content parts
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return "" if content is None else str(content)


def vector(text: str) -> list[float]:
    digest = hashlib.sha512(text.encode()).digest()
    vec = [b / 255 - 0.5 for b in digest]
    norm = math.sqrt(sum(v * v for v in vec)) or 1.0
    return [v / norm for v in vec]


class LoopbackJudge:
    """Start with ``with LoopbackJudge(delay=0.3) as judge: judge.url`` (".../v1")."""

    def __init__(
        self, delay: float = 0.3, jitter: float = 0.05, capacity: int | None = None
    ) -> None:
        self.delay, self.jitter, self.capacity = delay, jitter, capacity
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self.reset()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._server.request_queue_size = 256
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def reset(self) -> None:
        with self._lock:
            self.chat = self.refused = self.embedding_requests = self.embedding_texts = 0
            self.prompt_chars = self.schema_chars = self.in_flight = self.max_in_flight = 0
            self.unparsed = 0  # prompts answered with a bare rating (no schema found)
            #: time.monotonic() of the first chat request and of the last answer sent
            self.first: float | None = None
            self.last: float | None = None

    def stats(self) -> dict[str, int]:
        with self._lock:
            return {
                "judge_calls": self.chat,
                "refused_429": self.refused,
                "embedding_requests": self.embedding_requests,
                "embedding_texts": self.embedding_texts,
                "prompt_chars": self.prompt_chars,
                "schema_chars": self.schema_chars,
                "bare_rating_replies": self.unparsed,
                "max_in_flight": self.max_in_flight,
            }

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def __enter__(self) -> LoopbackJudge:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stopping.set()
        self._server.shutdown()
        self._server.server_close()

    def wait_for(self, body: dict[str, Any]) -> float:
        h = int.from_bytes(hashlib.sha256(json.dumps(body.get("messages")).encode()).digest()[:4])
        return max(0.0, self.delay + self.jitter * (2 * (h / 2**32) - 1))

    def completion(self, body: dict[str, Any]) -> dict[str, Any]:
        messages = body.get("messages") or []
        text = "\n".join(_content(m) for m in messages)
        n = int(body.get("n") or 1)
        fmt = body.get("response_format") or {}
        tools = body.get("tools") or []
        message: dict[str, Any]
        if fmt.get("type") == "json_schema":
            schema = fmt["json_schema"]["schema"]
            message = {"role": "assistant", "content": json.dumps(fill(schema, schema))}
        elif tools:
            fn = tools[0]["function"]
            args = fill(fn.get("parameters") or {}, fn.get("parameters") or {})
            call = {"id": "call_0", "type": "function"}
            call["function"] = {"name": fn["name"], "arguments": json.dumps(args)}
            message = {"role": "assistant", "content": None, "tool_calls": [call]}
        else:
            schema = _schema_in_text(text)
            if schema is None:
                with self._lock:
                    self.unparsed += 1
                reply = "2"
            else:
                reply = json.dumps(fill(schema, schema))
            message = {"role": "assistant", "content": reply}
        finish = "tool_calls" if tools and fmt.get("type") != "json_schema" else "stop"
        choices = [
            {"index": i, "message": message, "finish_reason": finish, "logprobs": None}
            for i in range(n)
        ]
        with self._lock:
            self.prompt_chars += len(text)
            self.schema_chars += len(json.dumps(fmt) if fmt else "") + len(
                json.dumps(tools) if tools else ""
            )
        words = len(text.split())
        out = len(json.dumps(message).split()) * n
        return {
            "id": "chatcmpl-loopback",
            "object": "chat.completion",
            "created": 0,
            "model": body.get("model", "loopback"),
            "choices": choices,
            "usage": {
                "prompt_tokens": words,
                "completion_tokens": out,
                "total_tokens": words + out,
            },
        }

    def embeddings(self, body: dict[str, Any]) -> dict[str, Any]:
        texts = body.get("input")
        texts = [texts] if isinstance(texts, str) else list(texts or [])
        with self._lock:
            self.embedding_requests += 1
            self.embedding_texts += len(texts)
        data = [
            {"object": "embedding", "index": i, "embedding": vector(str(t))}
            for i, t in enumerate(texts)
        ]
        usage = {"prompt_tokens": 0, "total_tokens": 0}
        return {"object": "list", "data": data, "model": body.get("model", "x"), "usage": usage}

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        judge = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True

            def _send(self, status: int, payload: dict[str, Any]) -> None:
                raw = json.dumps(payload).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(raw)))
                    self.end_headers()
                    self.wfile.write(raw)
                except OSError:
                    self.close_connection = True

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                path = self.path.split("?", 1)[0]
                if path.endswith("/embeddings"):
                    self._send(200, judge.embeddings(body))
                    return
                if not path.endswith("/chat/completions"):
                    self._send(404, {"error": {"message": f"no route {path}"}})
                    return
                with judge._lock:
                    judge.chat += 1
                    judge.first = judge.first or time.monotonic()
                    if judge.capacity is not None and judge.in_flight >= judge.capacity:
                        judge.refused += 1
                        refused = True
                    else:
                        refused = False
                        judge.in_flight += 1
                        judge.max_in_flight = max(judge.max_in_flight, judge.in_flight)
                if refused:
                    error = {"message": "Rate limit reached", "type": "rate_limit", "code": 429}
                    self._send(429, {"error": error})
                    return
                try:
                    reply = judge.completion(body)
                    if judge._stopping.wait(judge.wait_for(body)):
                        return
                    self._send(200, reply)
                    with judge._lock:
                        judge.last = time.monotonic()
                finally:
                    with judge._lock:
                        judge.in_flight -= 1

            def log_message(self, format: str, *args: Any) -> None:
                pass

        return Handler
