"""Whole-call deadlines, the retry budget and the response size cap, against loopback servers
that trickle, fail or flood. Nothing here asserts wall-clock time: the proof is what the
server managed to send before the client hung up, and how many requests it saw."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

import pytest

from evalrunner.errors import ConfigError, TargetError, TargetTimeout
from evalrunner.targets.http import HttpTarget
from tests.support.loopback_http import Served, serve

#: Far more than loopback socket buffers hold (a few MiB), so a server that could write it
#: all must have had a client reading it all.
FLOOD = 32 * 1024 * 1024
#: 60 bytes at one byte per 0.1 s: six seconds to send in full.
TRICKLED = json.dumps({"answer": "a slow but complete answer, byte by byte."}).encode()


def finished(served: Served, requests: int = 1, within: float = 15.0) -> None:
    """Wait (bounded) until the server's handlers for ``requests`` requests have ended."""
    ends = time.monotonic() + within
    while len(served.sent) < requests and time.monotonic() < ends:
        time.sleep(0.05)
    assert len(served.sent) >= requests, "the loopback server never finished its reply"


def test_a_trickling_server_is_cut_off_at_the_deadline_and_recorded_as_a_timeout(
    make_case: Callable[..., Any],
) -> None:
    with serve(TRICKLED, trickle_every=0.1) as (url, served):
        target = HttpTarget({"url": url, "timeout_seconds": 1, "max_retries": 0})
        with pytest.raises(TargetTimeout, match=r"did not answer within timeout_seconds=1 "):
            target.invoke(make_case())
        finished(served)
    # Per-read timeouts would have waited for all of it: the client hung up early instead.
    assert served.sent[0] < len(TRICKLED)
    assert served.hung_up == [True]


def test_retries_stop_when_the_total_budget_is_spent(
    make_case: Callable[..., Any],
) -> None:
    with serve(TRICKLED, trickle_every=0.1) as (url, served):
        target = HttpTarget(
            {"url": url, "timeout_seconds": 1, "max_retries": 5, "total_timeout_seconds": 1.5}
        )
        with pytest.raises(TargetTimeout):
            target.invoke(make_case())
        finished(served, served.requests)
    # Five retries were allowed, but a 1.5 s budget holds at most two 1 s attempts.
    assert 1 <= served.requests <= 2
    assert not any(n == len(TRICKLED) for n in served.sent)


def test_backoff_sleeps_fit_the_budget(loopback: Any, make_case: Callable[..., Any]) -> None:
    loopback.always(503, {"error": "busy"})
    target = HttpTarget(
        {"url": loopback.url, "max_retries": 4, "timeout_seconds": 5, "total_timeout_seconds": 1}
    )
    with pytest.raises(TargetError, match="HTTP 503"):
        target.invoke(make_case())
    # Backoff 0.5 s then 1 s: the third attempt would start after the 1 s budget.
    assert 1 <= len(loopback.requests) <= 2


def test_a_declared_oversized_body_is_refused_without_reading_it(
    make_case: Callable[..., Any],
) -> None:
    body = json.dumps({"answer": "x" * FLOOD}).encode()
    with serve(body) as (url, served):
        target = HttpTarget({"url": url, "max_retries": 2})
        with pytest.raises(TargetError, match=r"max_response_bytes=1,048,576") as info:
            target.invoke(make_case())
        finished(served)
    assert not info.value.retryable and served.requests == 1
    assert served.sent[0] < len(body)


def test_an_undeclared_oversized_body_stops_being_read_at_the_cap(
    make_case: Callable[..., Any],
) -> None:
    body = json.dumps({"answer": "x" * FLOOD}).encode()
    with serve(body, declare_length=False) as (url, served):
        target = HttpTarget({"url": url, "max_response_bytes": 256 * 1024})
        with pytest.raises(
            TargetError, match=r"larger than max_response_bytes=262,144 bytes \(more was sent\)"
        ):
            target.invoke(make_case())
        finished(served)
    assert served.sent[0] < len(body)  # the client hung up instead of reading it all


def test_a_body_within_a_raised_cap_is_read(make_case: Callable[..., Any]) -> None:
    body = json.dumps({"answer": "y" * (2 * 1024 * 1024)}).encode()
    with serve(body, declare_length=False) as (url, _):
        target = HttpTarget({"url": url, "max_response_bytes": 4 * 1024 * 1024})
        assert len(target.invoke(make_case()).answer) == 2 * 1024 * 1024


@pytest.mark.parametrize(
    "field,value",
    [("max_response_bytes", 10), ("max_response_bytes", 1.5), ("total_timeout_seconds", 0)],
)
def test_bad_limits_are_config_errors_naming_the_field(field: str, value: Any) -> None:
    with pytest.raises(ConfigError, match=f"target.{field}"):
        HttpTarget({"url": "http://127.0.0.1:9/", field: value})


def test_trickled_headers_are_cut_off_at_the_deadline_too(make_case: Callable[..., Any]) -> None:
    import socket
    import threading

    head = b"HTTP/1.1 200 OK\r\nX-Slow: " + b"a" * 100  # 125 bytes, 0.05 s each: 6 s
    sent: list[int] = []
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(10)

    def trickle_headers() -> None:
        connection, _ = server.accept()
        with connection:
            connection.recv(65536)
            count = 0
            try:
                for byte in head:
                    connection.send(bytes([byte]))
                    count += 1
                    time.sleep(0.05)
            except OSError:
                pass
            sent.append(count)

    thread = threading.Thread(target=trickle_headers, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{server.getsockname()[1]}/"
    try:
        target = HttpTarget({"url": url, "timeout_seconds": 1, "max_retries": 0})
        with pytest.raises(TargetTimeout):
            target.invoke(make_case())
        thread.join(timeout=15)
    finally:
        server.close()
    assert sent and sent[0] < len(head)


def test_attempts_start_no_thread_each(
    loopback: Any, monkeypatch: pytest.MonkeyPatch, make_case: Callable[..., Any]
) -> None:
    # One thread keeps every attempt's deadline; a thread per attempt cost more CPU than the
    # rest of a call to a quick target. Counted: threads started by the calling thread.
    import threading

    caller = threading.current_thread()
    started: list[str] = []
    real_start = threading.Thread.start

    def counting_start(self: threading.Thread) -> None:
        if threading.current_thread() is caller:
            started.append(self.name)
        real_start(self)

    monkeypatch.setattr(threading.Thread, "start", counting_start)
    loopback.always(200, {"answer": "25 days"})
    target = HttpTarget({"url": loopback.url + "/ask"})
    for _ in range(5):
        assert target.invoke(make_case()).answer == "25 days"
    assert len(started) <= 1  # the shared deadline thread, if this process had none yet


def test_a_short_deadline_is_kept_while_a_longer_one_is_pending(
    make_case: Callable[..., Any],
) -> None:
    # The shared deadline thread sleeps until the earliest deadline: an attempt with a
    # shorter one that starts later must wake it, or it would be cut only at the long one
    # (after the trickled answer had arrived in full).
    from concurrent.futures import ThreadPoolExecutor

    with serve(TRICKLED, trickle_every=0.1) as (url, served):
        patient = HttpTarget({"url": url, "timeout_seconds": 60, "max_retries": 0})
        hasty = HttpTarget({"url": url, "timeout_seconds": 1, "max_retries": 0})
        with ThreadPoolExecutor(1) as pool:
            long_call = pool.submit(patient.invoke, make_case())
            time.sleep(0.3)  # the long deadline is pending first
            with pytest.raises(TargetTimeout, match=r"timeout_seconds=1 "):
                hasty.invoke(make_case())
            assert long_call.result().answer.startswith("a slow but complete answer")
        finished(served, 2)
    assert sorted(served.hung_up) == [False, True]
