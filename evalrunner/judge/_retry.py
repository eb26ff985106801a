"""The retry policy every judge client shares: bounded attempts, full-jitter exponential
backoff, Retry-After honoured but capped.

Clients raise :class:`TransientError` for an attempt worth repeating (throttled, 5xx, timeout,
connection failure) and :class:`~evalrunner.judge.base.JudgeError` for one that is not (bad
key, unknown model, rejected request). Every wait is capped by the per-call timeout, so a
judge that keeps failing costs at most ``(2 * max_retries + 1) * timeout_seconds``.
"""

from __future__ import annotations

import random
import time
from collections.abc import Mapping
from dataclasses import dataclass
from email.utils import parsedate_to_datetime

#: First backoff window: the first retry waits uniformly in [0, 0.5 s], the next [0, 1 s], ...
BACKOFF_BASE_SECONDS = 0.5
#: No single backoff wait is longer than this (nor longer than the per-call timeout).
BACKOFF_CAP_SECONDS = 20.0
#: No server-requested wait (Retry-After) is longer than this (nor the per-call timeout).
RETRY_AFTER_CAP_SECONDS = 60.0

#: HTTP statuses worth retrying: timeout, throttling, conflict-on-load, 5xx, "overloaded".
RETRY_STATUSES = frozenset({408, 409, 429, 500, 502, 503, 504, 529})


class TransientError(Exception):
    """One attempt failed in a way that may succeed if repeated."""

    def __init__(self, message: str, *, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.retry_after = retry_after

    def __str__(self) -> str:
        return self.message


@dataclass
class RetryPolicy:
    """How many attempts, and how long to wait between them."""

    max_retries: int
    timeout: float
    base: float = BACKOFF_BASE_SECONDS
    cap: float = BACKOFF_CAP_SECONDS
    retry_after_cap: float = RETRY_AFTER_CAP_SECONDS

    @property
    def attempts(self) -> int:
        return self.max_retries + 1

    def delay(self, retry: int, retry_after: float | None = None) -> float:
        """Seconds to wait before retry number ``retry`` (0-based).

        The server's Retry-After wins when given (capped); otherwise full jitter:
        uniform(0, min(cap, base * 2**retry)), so concurrent cases that hit the same throttle
        spread out instead of retrying in lockstep.
        """
        if retry_after is not None and retry_after >= 0:
            return min(retry_after, self.retry_after_cap, self.timeout)
        window = min(self.cap, self.timeout, self.base * (2**retry))
        return random.uniform(0, max(window, 0.0))

    def sleep(self, retry: int, retry_after: float | None = None) -> float:
        seconds = self.delay(retry, retry_after)
        if seconds > 0:
            time.sleep(seconds)
        return seconds


def parse_retry_after(headers: Mapping[str, str] | None) -> float | None:
    """Seconds from ``retry-after-ms`` (OpenAI) or ``Retry-After`` (seconds or an HTTP date)."""
    if not headers:
        return None
    lowered = {str(k).lower(): str(v) for k, v in headers.items()}
    raw_ms = lowered.get("retry-after-ms")
    if raw_ms:
        try:
            return max(0.0, float(raw_ms) / 1000)
        except ValueError:
            pass
    raw = lowered.get("retry-after")
    if not raw:
        return None
    try:
        return max(0.0, float(raw))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(raw)
    except (TypeError, ValueError, IndexError):
        return None
    if when is None:  # pragma: no cover - older Pythons returned None
        return None
    return max(0.0, when.timestamp() - time.time())
