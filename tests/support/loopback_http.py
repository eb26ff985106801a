"""The one loopback HTTP server of the tests: a target (or any endpoint) on 127.0.0.1 that
answers from a script or a function of the request, records what it was sent, and can
trickle a reply byte by byte or end it without a length.

    with Loopback() as server:                      # scripted
        server.reply(503, times=2)                  # the next two requests
        server.always(200, {"answer": "25 days"})   # every other one
        ... server.url ...; server.requests[0].json()

    Loopback(responder=lambda seen: Reply(body=seen.body))   # computed from the request

    with serve(b'{"answer": "x"}', trickle_every=0.05) as (url, served): ...   # CLI runs

Bounded and self-stopping: the server lives until ``close()`` (or the ``with`` block), a
delay or trickle ends as soon as it is closed, and a client that hangs up ends the reply.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Body = bytes | str | dict[str, Any] | list[Any]


@dataclass
class Reply:
    status: int = 200
    body: Body = b"{}"
    headers: dict[str, str] = field(default_factory=dict)
    #: seconds before the reply starts
    delay: float = 0.0
    #: with a value, one byte per that many seconds
    trickle_every: float = 0.0
    #: without, no Content-Length: the body ends when the connection does
    declare_length: bool = True
    content_type: str = "application/json"

    def payload(self) -> bytes:
        body = self.body
        if isinstance(body, dict | list):
            body = json.dumps(body)
        return body.encode() if isinstance(body, str) else body


@dataclass
class Seen:
    """One request as the server received it."""

    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


@dataclass
class Served:
    """What the server sent: requests answered, and per request the body bytes it managed to
    send and whether the client hung up before the end."""

    requests: int = 0
    sent: list[int] = field(default_factory=list)
    hung_up: list[bool] = field(default_factory=list)


class Loopback:
    """A ThreadingHTTPServer on 127.0.0.1 (see the module docstring)."""

    def __init__(self, responder: Callable[[Seen], Reply] | None = None) -> None:
        self.requests: list[Seen] = []
        self.served = Served()
        self.script: list[Reply] = []
        self.default = Reply()
        self.responder = responder
        self.stopping = threading.Event()
        self._lock = threading.Lock()
        # Requests being answered: close() waits for them so that what they record (sent,
        # hung_up) is there when the caller's `with` block ends; the server's threads are
        # daemons, which server_close() does not join.
        self._answering = 0
        self._answered = threading.Condition(self._lock)
        self.server = _Quiet(("127.0.0.1", 0), _handler(self))
        self.server.daemon_threads = True
        self.server.block_on_close = False
        self.port = self.server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self.thread.start()

    def reply(
        self,
        status: int = 200,
        body: Body = b"{}",
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
        body: Body = b"{}",
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
        self.thread.join(timeout=5)
        with self._answered:
            self._answered.wait_for(lambda: self._answering == 0, timeout=5)

    def __enter__(self) -> Loopback:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _next(self, seen: Seen) -> Reply:
        with self._lock:
            self.requests.append(seen)
            self.served.requests += 1
            if self.script:
                return self.script.pop(0)
        return self.responder(seen) if self.responder else self.default

    def _record(self, sent: int, hung_up: bool) -> None:
        with self._lock:
            self.served.sent.append(sent)
            self.served.hung_up.append(hung_up)

    def _begin(self) -> None:
        with self._lock:
            self._answering += 1

    def _end(self) -> None:
        with self._answered:
            self._answering -= 1
            self._answered.notify_all()


class _Quiet(ThreadingHTTPServer):
    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a client hanging up mid-request is what the deadline tests provoke


def _handler(loopback: Loopback) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def _serve(self) -> None:
            loopback._begin()
            try:
                self._answer()
            finally:
                loopback._end()

        def _answer(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            seen = Seen(self.command, self.path, dict(self.headers.items()), body)
            reply = loopback._next(seen)
            if reply.delay and loopback.stopping.wait(reply.delay):
                return
            payload = reply.payload()
            sent, hung_up = 0, False
            try:
                self.send_response(reply.status)
                for key, value in {"Content-Type": reply.content_type, **reply.headers}.items():
                    self.send_header(key, value)
                if reply.declare_length:
                    self.send_header("Content-Length", str(len(payload)))
                else:
                    self.send_header("Connection", "close")
                    self.close_connection = True
                self.end_headers()
                sent = self._write(payload, reply.trickle_every)
            except OSError:  # the client hung up (what the deadline tests look for)
                hung_up = True
            loopback._record(sent, hung_up or sent < len(payload))

        def _write(self, payload: bytes, every: float) -> int:
            if not every:
                sent = 0
                for i in range(0, len(payload), 64 * 1024):
                    if loopback.stopping.is_set():
                        break
                    self.wfile.write(payload[i : i + 64 * 1024])
                    sent = min(len(payload), i + 64 * 1024)
                return sent
            self.wfile.flush()
            for i in range(len(payload)):
                if loopback.stopping.wait(every):
                    return i
                self.wfile.write(payload[i : i + 1])
                self.wfile.flush()
            return len(payload)

        do_POST = do_PUT = do_GET = _serve

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return Handler


#: A reply chosen from the request body: the bytes to send and the trickle interval (0: at once).
Responder = Callable[[bytes], tuple[bytes, float]]


@contextmanager
def serve(
    body: bytes | Responder,
    *,
    trickle_every: float = 0.0,
    content_type: str = "application/json",
    declare_length: bool = True,
) -> Iterator[tuple[str, Served]]:
    """Serve ``body`` to every request at ``<url>/answer``; with ``trickle_every``, one byte
    per that many seconds; without ``declare_length``, no Content-Length. ``body`` may be a
    function of the request body returning ``(bytes, trickle_every)``."""

    def respond(seen: Seen) -> Reply:
        reply, every = body(seen.body) if callable(body) else (body, trickle_every)
        return Reply(
            body=reply,
            trickle_every=every,
            declare_length=declare_length,
            content_type=content_type,
        )

    with Loopback(responder=respond) as server:
        yield f"{server.url}/answer", server.served
