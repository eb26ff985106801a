"""A scripted OpenAI-compatible chat server on loopback, for judge and judge-metric tests.

Usage (the ``judge_stub`` fixture in ``tests/conftest.py`` yields a started stub)::

    from pydantic import BaseModel
    from evalrunner.judge import Message
    from tests.support.judge_stub import StubReply

    class Verdicts(BaseModel):
        verdicts: list[str]

    def test_my_metric(judge_stub):
        def responder(messages, request):
            prompt = messages[-1]["content"]
            if "statements" in prompt:
                return {"statements": ["a", "b"]}  # dict/list: sent as JSON text
            return '{"verdicts": ["yes", "no"]}'  # str: sent as the message content

        judge_stub.responder = responder
        judge = judge_stub.judge()  # an OpenAIJudge at the stub (memory cache, fast retries)
        reply = judge.ask([Message(role="user", content="...")], Verdicts, purpose="verdicts")
        assert reply.value.verdicts == ["yes", "no"]
        assert len(judge_stub.requests) == 1
        assert judge_stub.requests[0].messages[-1]["role"] == "user"

``responder(messages, request)`` gets the request's ``messages`` (list of dicts) and the whole
request body (dict), and returns the assistant's content: a ``str``, a ``dict``/``list`` (sent
as JSON text), or a :class:`StubReply` for status codes, headers (Retry-After), delays, token
counts and log-probabilities. It is called from server threads (concurrently when the judge
is). If it raises, the stub answers HTTP 400 with the exception (the judge fails at once, no
retries) and keeps it in ``stub.errors``.

Also: ``stub.url`` ("http://127.0.0.1:PORT/v1"), ``stub.requests`` (a copy, in arrival order),
``stub.max_in_flight``, ``stub.capacity`` (429 above that many in flight; ``stub.refused``
counts them), ``stub.clear()``, ``stub.judge_config(**overrides)``, ``scripted(...)``,
and ``stub.serial = True`` for a server that answers one request at a time, start to finish
(llama.cpp's single slot): the others wait, and a reply's delay runs on after its client gave
up. :class:`tests.support.local_model.LocalModel` is a responder that behaves like a small
model behind llama.cpp, vLLM or Ollama.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["JudgeStub", "StubReply", "StubRequest", "scripted"]

PATHS = ("/v1/chat/completions", "/chat/completions")


@dataclass
class StubReply:
    """Full control over one answer. ``content`` is the assistant message for a 2xx status
    and the error message otherwise; ``body`` (dict or str) replaces the whole body."""

    content: str | dict[str, Any] | list[Any] = "{}"
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    #: Seconds to wait before answering (interrupted, unanswered, when the stub stops).
    delay: float = 0.0
    #: None: the word count of the request's messages / of the content.
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    #: ``[{token: logprob, ...}]`` per output position, sent in OpenAI's logprobs format.
    top_logprobs: list[dict[str, float]] | None = None
    finish_reason: str = "stop"
    body: dict[str, Any] | str | None = None


@dataclass(frozen=True)
class StubRequest:
    """One request the stub received."""

    path: str
    headers: dict[str, str]
    body: dict[str, Any]

    @property
    def messages(self) -> list[dict[str, Any]]:
        return list(self.body.get("messages") or [])

    @property
    def prompt(self) -> str:
        """All message contents, joined by blank lines (handy for ``in`` checks)."""
        return "\n\n".join(str(m.get("content", "")) for m in self.messages)


Responder = Callable[[list[dict[str, Any]], dict[str, Any]], "str | dict | list | StubReply"]


def default_responder(messages: list[dict[str, Any]], request: dict[str, Any]) -> str:
    return "{}"


def scripted(*replies: str | dict[str, Any] | list[Any] | StubReply) -> Responder:
    """A responder that answers with ``replies`` in arrival order, then repeats the last."""
    if not replies:
        raise ValueError("scripted() needs at least one reply")
    lock = threading.Lock()
    queue = iter(replies)
    last: list[Any] = [replies[0]]

    def responder(messages: list[dict[str, Any]], request: dict[str, Any]) -> Any:
        with lock:
            last[0] = next(queue, last[0])
            return last[0]

    return responder


def _words(text: str) -> int:
    return len(text.split())


def _logprobs_body(top: list[dict[str, float]]) -> dict[str, Any]:
    content = []
    for position in top:
        best = max(position.items(), key=lambda kv: kv[1]) if position else ("", 0.0)
        content.append(
            {
                "token": best[0],
                "logprob": best[1],
                "top_logprobs": [{"token": t, "logprob": lp} for t, lp in position.items()],
            }
        )
    return {"content": content}


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    request_queue_size = 128  # concurrency tests open many connections at once


class JudgeStub:
    """An OpenAI-compatible ``POST /v1/chat/completions`` on 127.0.0.1 (a free port)."""

    def __init__(self, responder: Responder | None = None) -> None:
        self.responder: Responder = responder or default_responder
        self.errors: list[BaseException] = []
        self._requests: list[StubRequest] = []
        self._lock = threading.Lock()
        self._in_flight = 0
        self._max_in_flight = 0
        self._ids = itertools.count(1)
        self._stopping = threading.Event()
        #: One request at a time, start to finish (see the module docstring).
        self.serial = False
        #: When set, a request without ``Authorization: Bearer <key>`` is answered 401, as
        #: OpenAI answers a missing or wrong key (recorded like any other request).
        self.required_key: str | None = None
        #: When set, a request arriving while this many are being answered is refused with
        #: HTTP 429 (and ``retry_after``, when set, as its Retry-After), as a rate-limited
        #: hosted endpoint refuses what is over its limit; counted in ``refused``.
        self.capacity: int | None = None
        self.retry_after: str | None = None
        self.refused = 0
        self._slot = threading.Lock()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle ---------------------------------------------------------------------------
    def start(self) -> JudgeStub:
        if self._server is None:
            self._stopping.clear()
            self._server = _Server(("127.0.0.1", 0), self._handler_class())
            self._thread = threading.Thread(
                target=self._server.serve_forever,
                kwargs={"poll_interval": 0.01},
                name="judge-stub",
                daemon=True,
            )
            self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is None:
            return
        self._stopping.set()  # delayed answers give up at once
        self._server.shutdown()
        self._server.server_close()
        self._server = None

    def __enter__(self) -> JudgeStub:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- what tests look at ------------------------------------------------------------------
    @property
    def url(self) -> str:
        """The base URL to configure: ``http://127.0.0.1:PORT/v1``."""
        if self._server is None:
            raise RuntimeError("the judge stub is not started")
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    @property
    def requests(self) -> list[StubRequest]:
        with self._lock:
            return list(self._requests)

    @property
    def max_in_flight(self) -> int:
        """The most requests the stub was answering at the same time."""
        with self._lock:
            return self._max_in_flight

    def clear(self) -> None:
        """Forget recorded requests, errors, refusals and the in-flight maximum."""
        with self._lock:
            self._requests.clear()
            self.refused = 0
            self.errors.clear()
            self._max_in_flight = self._in_flight

    def judge_config(self, **overrides: Any) -> Any:
        """A JudgeConfig for this stub: model "stub-judge", 5 s timeout, 2 retries, memory
        cache (each judge has its own). ``openai`` overrides merge into the openai part."""
        from evalrunner.judge.config import JudgeConfig

        openai = {
            "base_url": self.url,
            "model": "stub-judge",
            "api_key_env": "EVALRUNNER_SECRET_JUDGE_STUB_KEY",
        }
        openai.update(overrides.pop("openai", {}))
        settings: dict[str, Any] = {"timeout_seconds": 5, "max_retries": 2, "cache": True}
        settings.update(overrides)
        return JudgeConfig.model_validate({"openai": openai, **settings})

    def judge(self, *, store: Any = None, **overrides: Any) -> Any:
        """``build_judge(self.judge_config(**overrides), store=store)`` with 10 ms backoff."""
        from evalrunner.judge.factory import build_judge

        judge = build_judge(self.judge_config(**overrides), store=store)
        judge.backoff_base = 0.01  # type: ignore[attr-defined]
        return judge

    # -- serving -----------------------------------------------------------------------------
    def _record(self, request: StubRequest) -> bool:
        """Count the request in; False when it is over ``capacity`` (not counted in flight)."""
        with self._lock:
            self._requests.append(request)
            if self.capacity is not None and self._in_flight >= self.capacity:
                self.refused += 1
                return False
            self._in_flight += 1
            self._max_in_flight = max(self._max_in_flight, self._in_flight)
            return True

    def _finish(self) -> None:
        with self._lock:
            self._in_flight -= 1

    def _answer(self, body: dict[str, Any]) -> StubReply:
        try:
            result = self.responder(list(body.get("messages") or []), body)
        except Exception as exc:
            with self._lock:
                self.errors.append(exc)
            return StubReply(
                status=400, content=f"stub responder raised {type(exc).__name__}: {exc}"
            )
        return result if isinstance(result, StubReply) else StubReply(content=result)

    def _payload(self, reply: StubReply, body: dict[str, Any]) -> bytes:
        if reply.body is not None:
            raw = reply.body
            return (raw if isinstance(raw, str) else json.dumps(raw)).encode("utf-8")
        content = reply.content
        text = content if isinstance(content, str) else json.dumps(content)
        if not 200 <= reply.status < 300:
            error = {"message": text, "type": "stub_error", "code": reply.status}
            return json.dumps({"error": error}).encode("utf-8")
        prompt_words = sum(_words(str(m.get("content", ""))) for m in body.get("messages") or [])
        prompt_tokens = reply.prompt_tokens if reply.prompt_tokens is not None else prompt_words
        completion_tokens = (
            reply.completion_tokens if reply.completion_tokens is not None else _words(text)
        )
        choice: dict[str, Any] = {
            "index": 0,
            "message": {"role": "assistant", "content": text},
            "finish_reason": reply.finish_reason,
            "logprobs": None,
        }
        if reply.top_logprobs is not None:
            choice["logprobs"] = _logprobs_body(reply.top_logprobs)
        completion = {
            "id": f"chatcmpl-stub-{next(self._ids)}",
            "object": "chat.completion",
            "created": 0,
            "model": body.get("model", "stub"),
            "choices": [choice],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            },
        }
        return json.dumps(completion).encode("utf-8")

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        stub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True  # headers and body are two writes: no 40 ms stalls

            def _send(self, status: int, payload: bytes, headers: dict[str, str]) -> None:
                try:
                    self.send_response(status)
                    for key, value in {"Content-Type": "application/json", **headers}.items():
                        self.send_header(key, value)
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                except OSError:  # the client gave up (timeout tests)
                    self.close_connection = True

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                path = self.path.split("?", 1)[0]
                if path not in PATHS:
                    error = {"error": {"message": f"no route {path}", "code": 404}}
                    self._send(404, json.dumps(error).encode(), {})
                    return
                try:
                    body = json.loads(raw or b"{}")
                except ValueError:
                    self._send(400, b'{"error": {"message": "body is not JSON"}}', {})
                    return
                if not stub._record(StubRequest(path, dict(self.headers.items()), body)):
                    error = {"message": "Rate limit reached", "type": "rate_limit", "code": 429}
                    after = {"Retry-After": stub.retry_after} if stub.retry_after else {}
                    self._send(429, json.dumps({"error": error}).encode(), after)
                    return
                key = stub.required_key
                if key is not None and self.headers.get("Authorization") != f"Bearer {key}":
                    message = "You didn't provide an API key, or it is not valid."
                    error = {"message": message, "type": "invalid_request_error", "code": 401}
                    self._send(401, json.dumps({"error": error}).encode(), {})
                    stub._finish()
                    return
                try:
                    with stub._slot if stub.serial else contextlib.nullcontext():
                        reply = stub._answer(body)
                        if reply.delay and stub._stopping.wait(reply.delay):
                            self.close_connection = True
                            return
                        self._send(reply.status, stub._payload(reply, body), reply.headers)
                finally:
                    stub._finish()

            def do_GET(self) -> None:
                self._send(404, b'{"error": {"message": "POST /v1/chat/completions"}}', {})

            def log_message(self, format: str, *args: Any) -> None:
                pass

        return Handler
