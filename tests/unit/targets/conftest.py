"""Fixtures for the target tests: fake AWS credentials and a scripted loopback HTTP server."""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from evalrunner.suite.model import TestCase, Turn


@pytest.fixture(autouse=True)
def aws_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fake credentials and a default region; nothing from the developer's AWS setup leaks in."""
    for name in list(os.environ):
        if name.startswith(("AWS_ENDPOINT_URL", "AWS_PROFILE", "AWS_CONFIG_FILE")):
            monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_SESSION_TOKEN", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("AWS_CONFIG_FILE", os.devnull)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", os.devnull)
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")


@pytest.fixture
def make_case() -> Callable[..., TestCase]:
    def make(question: str = "How many leave days do I get?", **kwargs: Any) -> TestCase:
        conversation = [Turn(role=r, content=c) for r, c in kwargs.pop("turns", [])]
        return TestCase(
            index=0, case_id="case-0001", question=question, conversation=conversation, **kwargs
        )

    return make


@dataclass
class Reply:
    status: int = 200
    body: bytes | str | dict[str, Any] | list[Any] = b"{}"
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0


@dataclass
class Seen:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


class Loopback:
    """A ThreadingHTTPServer on 127.0.0.1 that answers from a script and records requests."""

    def __init__(self) -> None:
        self.requests: list[Seen] = []
        self.script: list[Reply] = []
        self.default = Reply()
        self.stopping = threading.Event()
        self._lock = threading.Lock()
        loopback = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _serve(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                reply = loopback._next(
                    Seen(self.command, self.path, {k: v for k, v in self.headers.items()}, body)
                )
                if reply.delay and loopback.stopping.wait(reply.delay):
                    return
                payload = reply.body
                if isinstance(payload, dict | list):
                    payload = json.dumps(payload)
                if isinstance(payload, str):
                    payload = payload.encode()
                try:
                    self.send_response(reply.status)
                    headers = {"Content-Type": "application/json", **reply.headers}
                    for key, value in headers.items():
                        self.send_header(key, value)
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                except OSError:  # the client gave up (timeout tests)
                    pass

            do_POST = do_PUT = do_GET = _serve

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.server.block_on_close = False
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self.thread.start()

    def _next(self, seen: Seen) -> Reply:
        with self._lock:
            self.requests.append(seen)
            return self.script.pop(0) if self.script else self.default

    def reply(
        self,
        status: int = 200,
        body: bytes | str | dict[str, Any] | list[Any] = b"{}",
        *,
        headers: dict[str, str] | None = None,
        delay: float = 0.0,
        times: int = 1,
    ) -> None:
        """Answer the next ``times`` requests like this (after those already scripted)."""
        self.script.extend([Reply(status, body, headers or {}, delay)] * times)

    def always(
        self,
        status: int = 200,
        body: bytes | str | dict[str, Any] | list[Any] = b"{}",
        *,
        headers: dict[str, str] | None = None,
        delay: float = 0.0,
    ) -> None:
        """Answer every request beyond the scripted ones like this."""
        self.default = Reply(status, body, headers or {}, delay)

    def close(self) -> None:
        self.stopping.set()
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def loopback() -> Iterator[Loopback]:
    server = Loopback()
    yield server
    server.close()
