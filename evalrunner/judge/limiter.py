"""How many judge calls are in flight at once: found by the run, not guessed by the user.

A fixed limit is wrong both ways: 8 left a hosted endpoint answering in 0.3 s idle for half
of a judge-bound run (20 in flight was 1.8× faster, issue 31), while a single-slot local
server (llama.cpp) or a rate-limited key wants fewer. :class:`AdaptiveLimiter` does what TCP
does for the same problem (AIMD):

* it **starts** at :data:`START_CONCURRENCY` (or the cap, when lower), which keeps a typical
  hosted endpoint busy from the first second;
* on each answered call while the limit was the bottleneck it **grows**: by one per answer
  until the first sign of overload (slow start, doubling each round trip), then by one per
  round trip (``1 / limit`` per answer);
* on **overload** it **narrows** to :data:`OVERLOAD_BACKOFF` of itself: a 429, a 5xx, a
  timeout (anything the clients raise as :class:`~evalrunner.retry.TransientError`); and to
  :data:`LATENCY_BACKOFF` of itself when the answers' smoothed latency rises past
  :data:`LATENCY_RISE` × the fastest recent answer and by :data:`LATENCY_RISE_MIN_SECONDS`
  at least (a server that queues instead of refusing: llama.cpp's single slot). Answers to
  calls that started before the last decrease do not decrease it again: one decrease per
  round trip;
* a ``Retry-After`` on an overload holds every new call of the endpoint back until then (as
  capped for the retry itself, and at most ``retry_after_cap``), not just the call that got
  it;
* it never goes above the **cap**, ``judge.max_concurrency``, nor below one.

There is one limiter per judge endpoint per process (:func:`limiter_for`): every case of
every run of this process that asks the same endpoint shares it, so two runs in one notebook
do not each hammer it, and what one run learned the next starts from.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

#: Calls in flight a limiter starts with (lowered to the cap): enough to keep a hosted
#: endpoint answering in a fraction of a second busy; an overloaded one answers 429 soon.
START_CONCURRENCY = 16
#: Multiplicative decrease on a refusal (429, 5xx, timeout): 0.7, as CUBIC (TCP) uses; 0.5
#: (Reno) left a rate-limited run 1.26x its ideal against 1.18x (bench/RESULTS.md).
OVERLOAD_BACKOFF = 0.7
#: Multiplicative decrease when latency rises (gentler: the server still answers).
LATENCY_BACKOFF = 0.8
#: Smoothed latency this many times the fastest recent answer counts as queueing.
LATENCY_RISE = 3.0
#: ... and at least this many seconds slower: a few milliseconds of the client's own
#: scheduling is not the server queueing.
LATENCY_RISE_MIN_SECONDS = 0.25
#: Weight of the newest answer in the smoothed latency.
LATENCY_SMOOTHING = 0.2
#: Answers the baseline (the fastest recent answer) looks back over.
LATENCY_WINDOW = 200
#: Answers the latency rule waits for, at first and after each decrease, before it judges.
LATENCY_MIN_SAMPLES = 10


@dataclass
class Permit:
    """One call's slot: when it started, and what the call reports when it ends."""

    started: float
    outcome: str = "neutral"  # "ok", "overload" or "neutral" (a refusal that is not load)
    retry_after: float | None = None

    def ok(self) -> None:
        self.outcome = "ok"

    def overloaded(self, retry_after: float | None = None) -> None:
        self.outcome = "overload"
        self.retry_after = retry_after


class AdaptiveLimiter:
    """An AIMD concurrency limit for one endpoint (see the module docstring). Thread-safe."""

    def __init__(
        self,
        cap: int,
        *,
        start: int | None = None,
        retry_after_cap: float = 60.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.cap = max(1, int(cap))
        self.limit = float(min(self.cap, start if start is not None else START_CONCURRENCY))
        self.limit = max(1.0, self.limit)
        self.retry_after_cap = retry_after_cap
        self.clock = clock
        self.in_flight = 0
        #: The most calls that were in flight at once (for the bench and tests).
        self.peak = 0
        #: Until the first overload, each answer adds one (slow start).
        self.slow_start = True
        self.decreases = 0
        self._not_before = 0.0
        self._last_decrease = float("-inf")
        self._latencies: deque[float] = deque(maxlen=LATENCY_WINDOW)
        self._smoothed: float | None = None
        self._samples = 0
        self._cond = threading.Condition()

    @property
    def slots(self) -> int:
        """Calls allowed in flight now."""
        return max(1, min(self.cap, int(self.limit)))

    def set_cap(self, cap: int) -> None:
        """A later run's ``judge.max_concurrency`` for the same endpoint: its cap holds."""
        with self._cond:
            self.cap = max(1, int(cap))
            self.limit = min(self.limit, float(self.cap))
            self._cond.notify_all()

    def delay(self) -> float:
        """Seconds until a new call may start because of a ``Retry-After`` (0: none)."""
        with self._cond:
            return max(0.0, self._not_before - self.clock())

    @contextmanager
    def slot(self) -> Iterator[Permit]:
        """Hold one slot for one attempt; the caller marks the permit ``ok()`` or
        ``overloaded()`` before leaving (left unmarked: neither grows nor shrinks)."""
        permit = self._acquire()
        try:
            yield permit
        finally:
            self._release(permit)

    def _acquire(self) -> Permit:
        with self._cond:
            while True:
                wait = self._not_before - self.clock()
                if wait > 0:
                    self._cond.wait(wait)
                    continue
                if self.in_flight < self.slots:
                    break
                self._cond.wait()
            self.in_flight += 1
            self.peak = max(self.peak, self.in_flight)
            return Permit(started=self.clock())

    def _release(self, permit: Permit) -> None:
        now = self.clock()
        with self._cond:
            binding = self.in_flight >= self.slots  # the limit, not the demand, held calls
            self.in_flight -= 1
            if permit.outcome == "ok":
                self._answered(now - permit.started, permit.started, binding)
            elif permit.outcome == "overload":
                if permit.retry_after is not None and permit.retry_after > 0:
                    hold = min(permit.retry_after, self.retry_after_cap)
                    self._not_before = max(self._not_before, now + hold)
                self._decrease(permit.started, OVERLOAD_BACKOFF, now)
            self._cond.notify_all()

    def _answered(self, latency: float, started: float, binding: bool) -> None:
        self._latencies.append(latency)
        smoothed = self._smoothed
        smoothed = (
            latency
            if smoothed is None
            else (LATENCY_SMOOTHING * latency + (1 - LATENCY_SMOOTHING) * smoothed)
        )
        self._smoothed = smoothed
        self._samples += 1
        if self._samples >= LATENCY_MIN_SAMPLES:
            fastest = min(self._latencies)
            rise = smoothed - fastest
            if smoothed > LATENCY_RISE * fastest and rise > LATENCY_RISE_MIN_SECONDS:
                if self._decrease(started, LATENCY_BACKOFF, self.clock()):
                    return
        if binding and self.limit < self.cap:
            step = 1.0 if self.slow_start else 1.0 / self.limit
            self.limit = min(float(self.cap), self.limit + step)

    def _decrease(self, started: float, factor: float, now: float) -> bool:
        """Shrink by ``factor``, once per round trip: False when a call that started before
        the last decrease reports (its overload is the one already acted on)."""
        self.slow_start = False
        if started < self._last_decrease:
            return False
        self.limit = max(1.0, self.limit * factor)
        self._last_decrease = now
        self.decreases += 1
        # What was slow before this decrease is no measure of the load after it (the
        # baseline, the fastest answer of the window, is kept).
        self._smoothed = None
        self._samples = 0
        return True


_REGISTRY: dict[tuple[str, ...], AdaptiveLimiter] = {}
_REGISTRY_LOCK = threading.Lock()


def limiter_for(endpoint: tuple[str, ...], cap: int) -> AdaptiveLimiter:
    """The process's limiter for ``endpoint`` (e.g. ``("openai", url, model)``), made on
    first use; a later judge of the same endpoint brings its own cap."""
    with _REGISTRY_LOCK:
        found = _REGISTRY.get(endpoint)
        if found is None:
            found = _REGISTRY[endpoint] = AdaptiveLimiter(cap)
            return found
    if found.cap != cap:
        found.set_cap(cap)
    return found


__all__ = [
    "LATENCY_BACKOFF",
    "LATENCY_RISE",
    "OVERLOAD_BACKOFF",
    "START_CONCURRENCY",
    "AdaptiveLimiter",
    "Permit",
    "limiter_for",
]
