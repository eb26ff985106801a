"""JSON over HTTP for untrusted servers: whole-call deadlines, a retry budget, a size cap.

Used by the HTTP and OpenAI-compatible targets and by the OpenAI-compatible judge (a judge's
answer is as untrusted as a target's). When to retry and how long to wait is
:class:`evalrunner.retry.RetryPolicy`'s call; this module does the attempts.

urllib3 rather than requests or httpx: it is already in every Lambda runtime (botocore needs
it) and its connection pools (one per origin, kept by the client) are thread-safe. Its own
timeouts are per socket operation, though, so a server that sends one byte every 0.4 s never
trips a 2 s read timeout; and its Retry sleeps without regard to any overall budget. So the
retry loop is ours:

- every attempt has a deadline, ``timeout_seconds`` after it starts, that bounds the whole
  exchange (connect, send, headers, body): one thread shared by all
  attempts shuts the socket down when it passes (no thread per attempt);
- all attempts and the backoff sleeps between them fit ``total_timeout_seconds``: a retry
  that could not start before the budget ends is not made, a sleep never overshoots it;
- the body is read in chunks and the read stops at ``max_response_bytes`` (a declared
  Content-Length above it is refused before reading), so memory stays bounded.
"""

from __future__ import annotations

import heapq
import itertools
import json
import math
import os
import re
import socket
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from http.client import RemoteDisconnected
from typing import Any

import urllib3
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool
from urllib3.exceptions import (
    ConnectTimeoutError,
    HTTPError,
    NewConnectionError,
    ProtocolError,
    ReadTimeoutError,
)
from urllib3.util import Timeout, parse_url

from evalrunner import redaction
from evalrunner.errors import TargetError, TargetTimeout
from evalrunner.retry import RetryClock, RetryPolicy, is_retryable_status, parse_retry_after

#: Default cap on one response body: far above any answer worth grading, far below what
#: hurts a 1 GiB Lambda (a 5 MB answer cost 1.1 GB once evaluators ran on all of it).
DEFAULT_MAX_RESPONSE_BYTES = 1024 * 1024


def snippet(text: str | bytes | None, limit: int = 300) -> str:
    """A short, single-line excerpt of a body for error messages."""
    if text is None:
        return ""
    if isinstance(text, bytes):
        text = text.decode("utf-8", errors="replace")
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


#: Library reprs that must never reach a user: ``<... object at 0x7f...>`` and urllib3's
#: ``HTTPConnectionPool(host='h', port=80)`` / ``_WatchedHTTPConnection(host=..., port=...)``.
_REPRS = re.compile(r"<[^<>]*\bobject at 0x[0-9a-fA-F]+>:?\s*|\b_?\w+\((?:host|pool)=[^()]*\):?\s*")


def _causes(exc: BaseException) -> list[BaseException]:
    """``exc``, then what it wraps (cause, context, exceptions among its args), outermost
    first, each once."""
    seen: list[BaseException] = []
    todo = [exc]
    while todo:
        current = todo.pop(0)
        if any(current is s for s in seen):
            continue
        seen.append(current)
        todo.extend(a for a in current.args if isinstance(a, BaseException))
        todo.extend(e for e in (current.__cause__, current.__context__) if e is not None)
    return seen


def describe_failure(exc: BaseException) -> str:
    """Why a connection failed, in words a user can act on: what the operating system said
    (refused, unknown host, reset, unreachable), never a library's class name or repr."""
    for cause in _causes(exc):
        if isinstance(cause, RemoteDisconnected):
            return "the server closed the connection without answering"
        if isinstance(cause, socket.gaierror):
            return "the host name could not be resolved (check its spelling and your DNS)"
        if isinstance(cause, ConnectionRefusedError):
            return "the connection was refused: nothing is listening at that host and port"
        if isinstance(cause, ConnectionResetError):
            return "the server reset the connection"
        if isinstance(cause, ConnectionAbortedError | BrokenPipeError):
            return "the server closed the connection"
    for cause in _causes(exc):
        if isinstance(cause, OSError) and cause.strerror:
            return cause.strerror[:1].lower() + cause.strerror[1:]
    texts = [_REPRS.sub("", str(c)).strip(" .:") for c in _causes(exc)]
    words = [t for t in texts if t and not t.startswith(("(", "<"))]
    return words[-1] if words else "the connection failed"


class ResponseTooLarge(TargetError):
    """A response passed ``max_response_bytes``; not retried (it would come back as big)."""

    def __init__(self, what: str, how: str, limit: int, *, settings: str = "target") -> None:
        super().__init__(
            f"{what}: the response is larger than max_response_bytes={limit:,} bytes ({how}); "
            f"it was not read further. Raise {settings}.max_response_bytes if answers are "
            "really this long.",
            retryable=False,
        )
        self.how = how
        self.limit = limit


#: Enough connections for the local engine's concurrency without blocking.
POOL_MAXSIZE = 50
#: Bytes read from the socket per step; the size cap is checked between steps.
CHUNK_BYTES = 64 * 1024


# --------------------------------------------------------------------------- the deadline


class _Deadline:
    """One attempt's deadline: when it passes, the reaper shuts the attempt's socket down.

    Socket timeouts bound each read; only closing the socket from outside bounds their sum.
    Connections register their socket here (through a thread-local, because the pool picks
    the connection inside urllib3) as soon as they have one.
    """

    __slots__ = ("at", "done", "expired", "sock")

    def __init__(self, at: float) -> None:
        self.at = at
        self.expired = False
        self.done = False
        self.sock: socket.socket | None = None

    def __enter__(self) -> _Deadline:
        _current.deadline = self
        return self

    def __exit__(self, *exc: object) -> None:
        _current.deadline = None
        _REAPER.finish(self)

    def watch(self, sock: socket.socket | None) -> None:
        with _REAPER.lock:
            self.sock = sock
            if self.expired:
                _shutdown(sock)


class _Reaper:
    """One daemon thread for every attempt of the process, instead of a timer thread per
    attempt: it sleeps until the earliest deadline still pending and shuts down the socket of
    an attempt that has not finished by then.

    Starting a thread per attempt cost more CPU than the rest of a call to a quick target, and
    its start handshake held the caller back (5-6 of 10 calls in flight against an instant
    target). Here an attempt costs a heap push and, when it ends, a pop; the thread wakes only
    when the earliest deadline passes (for finished attempts: about once per timeout period).
    """

    def __init__(self) -> None:
        self._reset()

    def _reset(self) -> None:
        self.lock = threading.Lock()
        self._wakeup = threading.Condition(self.lock)
        self._heap: list[tuple[float, int, _Deadline]] = []
        self._order = itertools.count()
        self._thread: threading.Thread | None = None
        #: When the thread wakes up next by itself (infinity: not before it is notified).
        self._waiting_until = math.inf

    def start(self, seconds: float) -> _Deadline:
        deadline = _Deadline(time.monotonic() + max(seconds, 0.0))
        with self.lock:
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(
                    target=self._run, name="evalrunner-http-deadlines", daemon=True
                )
                self._thread.start()
            heapq.heappush(self._heap, (deadline.at, next(self._order), deadline))
            if deadline.at < self._waiting_until:  # it would wake up too late for this one
                self._waiting_until = deadline.at
                self._wakeup.notify()
        return deadline

    def finish(self, deadline: _Deadline) -> None:
        with self.lock:
            deadline.done = True
            deadline.sock = None
            heap = self._heap
            while heap and heap[0][2].done:  # attempts mostly end in the order they began
                heapq.heappop(heap)

    def _run(self) -> None:
        heap = self._heap
        with self.lock:
            while True:
                while heap and heap[0][2].done:
                    heapq.heappop(heap)
                if not heap:
                    self._waiting_until = math.inf
                    self._wakeup.wait()
                    continue
                left = heap[0][0] - time.monotonic()
                if left > 0:
                    # A finished attempt's deadline may be the one waited for: waking up
                    # for nothing once per timeout period is cheaper than a notify per call.
                    self._waiting_until = heap[0][0]
                    self._wakeup.wait(left)
                    continue
                deadline = heapq.heappop(heap)[2]
                deadline.expired = True
                _shutdown(deadline.sock)

    def after_fork(self) -> None:
        """A forked child has the lock as the parent held it and no thread: start afresh."""
        self._reset()


_REAPER = _Reaper()
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_REAPER.after_fork)


def _shutdown(sock: socket.socket | None) -> None:
    if sock is None:
        return
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass  # already closed: nothing left to stop


_current = threading.local()


def _watch(sock: socket.socket | None) -> None:
    deadline = getattr(_current, "deadline", None)
    if deadline is not None:
        deadline.watch(sock)


class _WatchedHTTPConnection(HTTPConnection):
    def connect(self) -> None:
        super().connect()
        _watch(self.sock)

    def request(self, *args: Any, **kwargs: Any) -> None:
        if self.sock is not None:  # a kept-alive connection: watch it from the first byte
            _watch(self.sock)
        super().request(*args, **kwargs)


class _WatchedHTTPSConnection(HTTPSConnection):
    def connect(self) -> None:
        super().connect()
        _watch(self.sock)

    def request(self, *args: Any, **kwargs: Any) -> None:
        if self.sock is not None:
            _watch(self.sock)
        super().request(*args, **kwargs)


class _WatchedHTTPPool(HTTPConnectionPool):
    ConnectionCls = _WatchedHTTPConnection


class _WatchedHTTPSPool(HTTPSConnectionPool):
    ConnectionCls = _WatchedHTTPSConnection


_POOL_CLASSES: dict[str, type[HTTPConnectionPool]] = {
    "http": _WatchedHTTPPool,
    "https": _WatchedHTTPSPool,
}


# ------------------------------------------------------------------------------ the client


@dataclass(frozen=True)
class HttpResult:
    status: int
    body: bytes
    attempts: int
    content_type: str
    location: str = ""
    #: All response headers (Retry-After among them).
    headers: Mapping[str, str] = field(default_factory=dict)

    def json(self, what: str) -> Any:
        """The body as JSON, or a TargetError that shows what came back instead."""
        try:
            return json.loads(self.body)
        except ValueError:
            raise TargetError(
                f"{what} answered HTTP {self.status} with a body that is not JSON "
                f"(Content-Type {self.content_type or 'not set'}): "
                f"{snippet(self.body) or '(empty)'}"
            ) from None


class JsonHttpClient:
    """Sends JSON, returns the final response; the caller decides what a status means.

    ``settings`` names where the limits are set (``target`` or ``judge``), for the hints in
    errors.
    """

    def __init__(
        self,
        policy: RetryPolicy,
        *,
        max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
        settings: str = "target",
        pool_size: int = POOL_MAXSIZE,
    ) -> None:
        self.policy = policy
        self.max_response_bytes = max_response_bytes
        self.settings = settings
        self.pool_size = pool_size
        #: URL -> (its origin's connection pool, the request target): found once per URL.
        self._routes: dict[str, tuple[HTTPConnectionPool, str]] = {}
        self._pools: dict[tuple[str, str, int | None], HTTPConnectionPool] = {}
        self._routes_lock = threading.Lock()

    def route(self, url: str) -> tuple[HTTPConnectionPool, str]:
        """The connection pool for ``url``'s origin and the path to request, kept per URL.

        What urllib3's PoolManager does on every request (parse the URL, normalise a pool key,
        look the pool up), done once: a client calls one URL, a run thousands of times."""
        route = self._routes.get(url)
        if route is not None:
            return route
        parts = parse_url(url)
        scheme = (parts.scheme or "http").lower()
        pool_cls = _POOL_CLASSES.get(scheme)
        if pool_cls is None or not parts.host:
            raise TargetError(
                f"{redaction.mask_url(url)} is not an http:// or https:// URL with a host",
                retryable=False,
            )
        key = (scheme, parts.host.lower(), parts.port)
        with self._routes_lock:
            pool = self._pools.get(key)
            if pool is None:
                pool = pool_cls(parts.host, parts.port, maxsize=self.pool_size, retries=False)
                self._pools[key] = pool
            route = self._routes[url] = (pool, parts.request_uri)
        return route

    @property
    def timeout_seconds(self) -> float:
        return self.policy.timeout

    @property
    def total_timeout_seconds(self) -> float:
        return self.policy.budget

    def send(
        self, method: str, url: str, payload: Any, headers: dict[str, str], what: str
    ) -> HttpResult:
        """One logical call (retries included); ``what`` names it in errors, without secrets."""
        redaction.register_body(payload)  # credentials in the body are masked by value
        body = json.dumps(payload).encode("utf-8")
        clock = self.policy.start()
        attempt = 0
        while True:
            attempt += 1
            failure: TargetError | None = None
            result: HttpResult | None = None
            try:
                result = self.attempt(
                    method, url, body, headers, clock.attempt_seconds(), what, attempt
                )
            except ResponseTooLarge:
                raise
            except TargetError as exc:
                failure = exc
            if result is not None and not is_retryable_status(result.status):
                return result
            wait = clock.next_wait(attempt, self._retry_after(result))
            if wait is None:
                if result is not None:
                    return result
                assert failure is not None
                raise self._out_of_budget(failure, clock)
            time.sleep(wait)

    def attempt(
        self,
        method: str,
        url: str,
        body: bytes,
        headers: dict[str, str],
        seconds: float,
        what: str,
        attempt: int | None = None,
    ) -> HttpResult:
        """One request within ``seconds`` overall, the body read up to the size cap.

        Raises TargetTimeout or a retryable TargetError when the exchange failed, and
        ResponseTooLarge (not retryable) past the cap. ``attempt`` numbers it in errors.
        """
        # Everything sent that may be a credential is masked by value in every output, whatever
        # the header or parameter is called: here, the one door every request goes through.
        redaction.register_headers(headers)
        redaction.register_url(url)
        all_headers = {"Content-Type": "application/json", "Accept": "application/json"}
        all_headers.update(headers)
        with _REAPER.start(seconds) as deadline:
            response = None
            try:
                pool, path = self.route(url)
                response = pool.urlopen(
                    method,
                    path,
                    body=body,
                    headers=all_headers,
                    retries=False,
                    redirect=False,
                    assert_same_host=False,
                    timeout=Timeout(connect=seconds, read=seconds),
                    preload_content=False,
                )
                data = self._read_capped(response, what)
            except (HTTPError, OSError) as exc:
                if response is not None:
                    response.close()
                    response.release_conn()
                raise self._failure(exc, what, attempt, timed_out=deadline.expired) from exc
            except ResponseTooLarge:
                assert response is not None
                response.close()  # do not read the rest: drop the connection instead
                response.release_conn()
                raise
            if deadline.expired:  # finished reading just as the deadline passed
                response.close()
                response.release_conn()
                raise self._timeout(what, attempt)
        response.release_conn()
        return HttpResult(
            status=response.status,
            body=data,
            attempts=attempt or 1,
            content_type=response.headers.get("Content-Type", ""),
            location=response.headers.get("Location", ""),
            headers=dict(response.headers.items()),
        )

    def _read_capped(self, response: urllib3.BaseHTTPResponse, what: str) -> bytes:
        limit = self.max_response_bytes
        declared = response.headers.get("Content-Length", "")
        if declared.isdigit() and int(declared) > limit:
            raise self._too_large(what, f"Content-Length {int(declared):,} declared")
        if declared.isdigit() and not response.headers.get("Content-Encoding"):
            # The declared length bounds the read (nothing decompresses it): one read, not a
            # loop of chunks (the common case, a small JSON reply).
            return response.read()
        chunks: list[bytes] = []
        size = 0
        for chunk in response.stream(CHUNK_BYTES):
            size += len(chunk)
            if size > limit:
                raise self._too_large(what, "more was sent")
            chunks.append(chunk)
        return b"".join(chunks)

    @staticmethod
    def _retry_after(result: HttpResult | None) -> float | None:
        return parse_retry_after(result.headers) if result is not None else None

    def _too_large(self, what: str, how: str) -> ResponseTooLarge:
        return ResponseTooLarge(what, how, self.max_response_bytes, settings=self.settings)

    def _timeout(self, what: str, attempt: int | None) -> TargetTimeout:
        attempts = f"; {attempt} attempt(s)" if attempt else ""
        return TargetTimeout(
            f"{what} did not answer within timeout_seconds={self.timeout_seconds:g} (connect, "
            f"send and the whole body{attempts}). Raise {self.settings}.timeout_seconds "
            "if it is just slow.",
            retryable=True,
        )

    def _out_of_budget(self, failure: TargetError, clock: RetryClock) -> TargetError:
        if clock.out_of_budget:  # stopped by the budget, not by the retry count
            failure.message += (
                f" No retry left within total_timeout_seconds={self.total_timeout_seconds:g}."
            )
        return failure

    def _failure(
        self, reason: Any, what: str, attempt: int | None, *, timed_out: bool = False
    ) -> TargetError:
        attempts = f" ({attempt} attempt(s))" if attempt else ""
        if timed_out or isinstance(reason, ReadTimeoutError | TimeoutError):
            return self._timeout(what, attempt)
        # Checked first: urllib3 makes NewConnectionError a subclass of ConnectTimeoutError.
        if isinstance(reason, NewConnectionError):
            return TargetError(
                f"{what}: could not connect{attempts}: {describe_failure(reason)}. Check the "
                "URL and that the service is running and reachable from where evalrunner runs.",
                retryable=True,
            )
        if isinstance(reason, ConnectTimeoutError):
            return self._timeout(what, attempt)
        if isinstance(reason, ProtocolError):
            return TargetError(
                f"{what}: the connection broke{attempts}: {describe_failure(reason)}",
                retryable=True,
            )
        return TargetError(
            f"{what}: request failed{attempts}: {describe_failure(reason)}", retryable=True
        )


def status_error(result: HttpResult, what: str, *, auth_hint: str = "") -> TargetError:
    """A non-2xx final response as an error naming the status, attempts and body excerpt."""
    hint = f" {auth_hint}" if auth_hint and result.status in (401, 403) else ""
    if 300 <= result.status < 400:
        hint = f" It redirects to {result.location or '(no Location)'}: use that URL."
    return TargetError(
        f"{what} answered HTTP {result.status} after {result.attempts} attempt(s): "
        f"{snippet(result.body) or '(empty body)'}{hint}",
        retryable=is_retryable_status(result.status),
    )
