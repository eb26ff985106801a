"""A loopback HTTP target for runs through the CLI: answers a body (fixed, or chosen from the
request), or trickles it.

Bounded and self-stopping: the server only lives inside ``serve(...)``, every trickle has a
fixed number of bytes, and a client that hangs up ends the reply.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Served:
    """What the server did: requests seen, and per request the body bytes it managed to send
    and whether the client hung up before the end."""

    requests: int = 0
    sent: list[int] = field(default_factory=list)
    hung_up: list[bool] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)


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
    """Serve ``body`` to every POST; with ``trickle_every``, one byte per that many seconds;
    without ``declare_length``, no Content-Length (the body ends when the connection does).
    ``body`` may be a function of the request body returning ``(bytes, trickle_every)``."""
    served = Served()
    stop = threading.Event()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            request = self.rfile.read(length) if length else b""
            if callable(body):
                reply, every = body(request)
            else:
                reply, every = body, trickle_every
            with served.lock:
                served.requests += 1
            sent, hung_up = 0, False
            try:
                self.send_response(200)
                self.send_header("Content-Type", content_type)
                if declare_length:
                    self.send_header("Content-Length", str(len(reply)))
                else:
                    self.send_header("Connection", "close")
                    self.close_connection = True
                self.end_headers()
                if every:
                    self.wfile.flush()
                    for i in range(len(reply)):
                        if stop.wait(every):
                            break
                        self.wfile.write(reply[i : i + 1])
                        self.wfile.flush()
                        sent += 1
                else:
                    for i in range(0, len(reply), 64 * 1024):
                        if stop.is_set():
                            break
                        self.wfile.write(reply[i : i + 64 * 1024])
                        sent = min(len(reply), i + 64 * 1024)
            except OSError:  # the client hung up: what the deadline tests look for
                hung_up = True
            with served.lock:
                served.sent.append(sent)
                served.hung_up.append(hung_up or sent < len(reply))

        def log_message(self, format: str, *args: Any) -> None:
            pass

    class Quiet(ThreadingHTTPServer):
        def handle_error(self, request: Any, client_address: Any) -> None:
            pass  # a client hanging up mid-request is what these tests provoke

    server = Quiet(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.daemon = True
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/answer", served
    finally:
        stop.set()
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
        time.sleep(0)  # let handler threads notice the stop flag
