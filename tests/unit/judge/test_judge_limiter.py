"""The adaptive limit on judge calls in flight (issue 31 goal 5): it grows while the judge
keeps up, backs off on refusals and rising latency, honours Retry-After, stays under the
cap, and is one per endpoint per process."""

from __future__ import annotations

import itertools
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from pydantic import BaseModel

from evalrunner.judge import Message
from evalrunner.judge.limiter import (
    LATENCY_MIN_SAMPLES,
    OVERLOAD_BACKOFF,
    START_CONCURRENCY,
    AdaptiveLimiter,
    limiter_for,
)
from tests.support.judge_stub import JudgeStub, StubReply


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def answer(limiter: AdaptiveLimiter, clock: FakeClock, latency: float, *, hold: int = 0) -> None:
    """One call that answers after ``latency`` while ``hold`` others are in flight."""
    held = [limiter._acquire() for _ in range(hold)]
    with limiter.slot() as permit:
        clock.now += latency
        permit.ok()
    for other in held:
        limiter._release(other)


def fill(limiter: AdaptiveLimiter) -> list:
    """Take every slot (so the limit is what holds calls back)."""
    return [limiter._acquire() for _ in range(limiter.slots)]


def test_starts_at_the_default_or_the_cap_when_lower() -> None:
    assert AdaptiveLimiter(64).slots == START_CONCURRENCY
    assert AdaptiveLimiter(3).slots == 3


def test_grows_only_while_the_limit_holds_calls_back_and_never_past_the_cap() -> None:
    clock = FakeClock()
    limiter = AdaptiveLimiter(6, start=2, clock=clock)
    answer(limiter, clock, 0.1)  # one call in flight under a limit of 2: no evidence
    assert limiter.slots == 2
    for _ in range(10):
        held = fill(limiter)
        clock.now += 0.1
        held[0].ok()
        for permit in held:
            limiter._release(permit)
    assert limiter.slots == 6 and limiter.limit == 6.0


def test_a_refusal_narrows_the_limit_once_per_round_trip() -> None:
    clock = FakeClock()
    limiter = AdaptiveLimiter(32, start=16, clock=clock)
    in_flight = fill(limiter)
    clock.now += 0.2
    for permit in in_flight:  # all sixteen were refused: one decrease, not sixteen
        permit.overloaded()
        limiter._release(permit)
    assert limiter.slots == int(16 * OVERLOAD_BACKOFF) and limiter.decreases == 1
    # a call started after the decrease and refused again narrows it again
    with limiter.slot() as permit:
        clock.now += 0.1
        permit.overloaded()
    assert limiter.slots == int(16 * OVERLOAD_BACKOFF**2) and limiter.decreases == 2
    assert not limiter.slow_start


def test_never_below_one() -> None:
    clock = FakeClock()
    limiter = AdaptiveLimiter(4, start=1, clock=clock)
    for _ in range(5):
        with limiter.slot() as permit:
            clock.now += 0.1
            permit.overloaded()
    assert limiter.slots == 1


def test_after_the_first_refusal_it_grows_by_one_per_round_trip() -> None:
    clock = FakeClock()
    limiter = AdaptiveLimiter(32, start=8, clock=clock)
    with limiter.slot() as permit:
        clock.now += 0.1
        permit.overloaded()
    narrowed = limiter.slots
    assert narrowed == int(8 * OVERLOAD_BACKOFF)
    for _ in range(narrowed + 1):  # a window's worth of answers (1/limit each), limit binding
        held = fill(limiter)
        clock.now += 0.1
        held[0].ok()
        limiter._release(held[0])
        for permit in held[1:]:
            limiter._release(permit)
    assert limiter.slots == narrowed + 1


def test_retry_after_holds_every_new_call_back() -> None:
    clock = FakeClock()
    limiter = AdaptiveLimiter(8, clock=clock)
    with limiter.slot() as permit:
        permit.overloaded(retry_after=2.0)
    assert limiter.delay() == 2.0
    clock.now += 1.5
    assert limiter.delay() == 0.5
    clock.now += 0.5
    assert limiter.delay() == 0.0


def test_rising_latency_narrows_the_limit() -> None:
    clock = FakeClock()
    limiter = AdaptiveLimiter(16, start=8, clock=clock)
    for _ in range(LATENCY_MIN_SAMPLES):
        answer(limiter, clock, 0.1)
    assert limiter.decreases == 0
    for _ in range(LATENCY_MIN_SAMPLES):  # queued behind others: ten times slower
        answer(limiter, clock, 1.0)
    assert limiter.decreases >= 1 and limiter.slots < 8


def test_a_few_milliseconds_of_jitter_is_not_queueing() -> None:
    clock = FakeClock()
    limiter = AdaptiveLimiter(16, start=8, clock=clock)
    for _ in range(LATENCY_MIN_SAMPLES):
        answer(limiter, clock, 0.01)
    for _ in range(3 * LATENCY_MIN_SAMPLES):  # five times slower, but by 40 ms
        answer(limiter, clock, 0.05)
    assert limiter.decreases == 0


def test_one_limiter_per_endpoint_per_process_and_the_latest_cap_holds() -> None:
    first = limiter_for(("test", "http://a/v1", "m"), 8)
    assert limiter_for(("test", "http://a/v1", "m"), 8) is first
    assert limiter_for(("test", "http://b/v1", "m"), 8) is not first
    limiter_for(("test", "http://a/v1", "m"), 4)
    assert first.cap == 4 and first.slots == 4


# -- against the loopback judge -----------------------------------------------------------------
class Verdict(BaseModel):
    verdict: bool


def stub_judge_with_steady_clock(stub: JudgeStub, **config: object) -> Any:
    """A judge whose limiter reads a clock that moves 1 ms per reading: the answers' measured
    latency stays what the stub's own pacing makes it, however loaded the machine is (a
    starved test process once measured 0.3 s answers and, rightly, backed off)."""
    judge = stub.judge(**config)
    ticks = itertools.count()
    judge.limiter.clock = lambda: next(ticks) / 1000
    return judge


def ask_many(
    stub: JudgeStub, asks: int, threads: int, judge: Any = None, **config: object
) -> object:
    """``asks`` different questions from ``threads`` threads through one judge (``judge``,
    else one made from ``config``); the judge."""
    judge = judge if judge is not None else stub.judge(**config)
    judge.backoff_cap = 0.05

    def one(i: int) -> bool:
        message = Message(role="user", content=f"Is statement {i} supported?")
        return judge.ask([message], Verdict, purpose="verdict").value.verdict

    with ThreadPoolExecutor(threads) as pool:
        results = list(pool.map(one, range(asks)))
    assert results == [True] * asks  # no ask failed
    return judge


def test_a_rate_limited_judge_converges_under_its_limit_and_no_ask_fails(
    judge_stub: JudgeStub,
) -> None:
    judge_stub.responder = lambda messages, request: StubReply('{"verdict": true}', delay=0.02)
    judge_stub.capacity = 4
    judge = ask_many(judge_stub, 240, 20, max_concurrency=20, max_retries=8)
    limiter = judge.limiter
    # it started at 16 and was refused: it backed off to about the server's limit
    assert limiter.decreases >= 1
    assert limiter.slots <= judge_stub.capacity + 1
    # refusals are the probing of a sawtooth, not the run: a fixed 16 would see most refused
    assert judge_stub.refused < 0.25 * len(judge_stub.requests)
    assert judge_stub.max_in_flight <= 4


def test_an_unlimited_judge_lets_the_limit_climb_to_the_cap(judge_stub: JudgeStub) -> None:
    judge_stub.responder = lambda messages, request: StubReply('{"verdict": true}', delay=0.01)
    judge = stub_judge_with_steady_clock(judge_stub, max_concurrency=20)
    judge = ask_many(judge_stub, 200, 24, judge=judge)
    assert judge.limiter.slots == 20
    assert judge.limiter.decreases == 0
    assert judge_stub.refused == 0


def test_retry_after_pauses_the_endpoint_for_every_caller(judge_stub: JudgeStub) -> None:
    """After a 429 with Retry-After, every thread's new calls wait until it has passed, not
    just the refused one. (A slow machine can only make requests later, never earlier, so
    this cannot fail for want of speed.)"""
    lock = threading.Lock()
    refused_at: list[float] = []
    early: list[float] = []

    def responder(messages: list, request: dict) -> StubReply:
        now = time.monotonic()
        with lock:
            if not refused_at:
                refused_at.append(now)
                return StubReply("slow down", status=429, headers={"retry-after-ms": "500"})
            if now < refused_at[0] + 0.45:
                early.append(now - refused_at[0])
        return StubReply('{"verdict": true}', delay=0.01)

    judge_stub.responder = responder
    judge = ask_many(judge_stub, 1, 1, max_concurrency=4)  # the refusal, then the retry
    assert judge.limiter.decreases == 1
    judge_stub.clear()
    early.clear()
    refused_at.clear()
    judge2 = judge_stub.judge(max_concurrency=4)  # same endpoint: same limiter, fresh state
    assert judge2.limiter is judge.limiter
    judge2.limiter.limit = 4.0

    def one(i: int) -> bool:
        if i:  # the others start while the first one's refusal holds the endpoint
            time.sleep(0.1)
        message = Message(role="user", content=f"Is claim {i} supported?")
        return judge2.ask([message], Verdict, purpose="verdict").value.verdict

    with ThreadPoolExecutor(4) as pool:
        assert list(pool.map(one, range(4))) == [True] * 4
    assert refused_at and early == []


def test_a_single_slot_server_that_queues_narrows_the_limit_by_its_latency(
    judge_stub: JudgeStub,
) -> None:
    """llama.cpp answers one request at a time and refuses none: the others wait in its
    queue, so the answers' latency grows with the calls in flight. The limit narrows from
    the 16 it starts with, with no refusal to go by."""
    judge_stub.serial = True
    judge_stub.responder = lambda messages, request: StubReply('{"verdict": true}', delay=0.05)
    judge = ask_many(judge_stub, 120, 16, max_concurrency=16)
    assert judge_stub.refused == 0
    assert judge.limiter.decreases >= 1 and judge.limiter.slots < 16
