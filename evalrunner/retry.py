"""The one retry policy: which failures are worth repeating, how often, how long to wait, and
the budget every attempt and wait must fit in. Used by the HTTP and OpenAI-compatible targets
(through :mod:`evalrunner.http_client`), the Bedrock agent's mid-stream retries, and both judge
clients.

**Which HTTP statuses are retried** (:data:`RETRY_STATUSES`), and why:

- 408 Request Timeout: the server gave up waiting for our request; RFC 9110 says the client
  may repeat it.
- 429 Too Many Requests: throttled; the Retry-After header, when sent, says when to come back.
- 500 Internal Server Error, 502 Bad Gateway, 503 Service Unavailable, 504 Gateway Timeout:
  the server or a proxy in front of it failed or was overloaded; the next try often lands on a
  healthy instance. 503 may carry Retry-After too.
- 529 "overloaded": not standard, but Anthropic's API (also behind OpenAI-compatible
  gateways) sends it for exactly what 503 means.

Plus every connection failure: refused, reset, broken mid-response, no answer within the
deadline. Not retried: other 4xx (the request itself is wrong and would be refused again, 409
included: a conflict with the resource's state repeats with the same request), other 5xx
(501, 505: the server cannot do it), redirects, and a response over the size cap (it would
come back as big).

**Waits**: exponential from ``base`` (0.5 s, 1 s, 2 s, ...), each capped at ``cap`` and at
the per-attempt timeout; with ``jitter`` (full jitter) the wait is uniform in [0, that], so
concurrent cases that hit the same throttle spread out instead of retrying in lockstep. A
server's Retry-After (seconds, an HTTP date, or OpenAI's ``retry-after-ms``) wins, capped at
``retry_after_cap`` and the per-attempt timeout.

**Budget**: ``total_timeout`` bounds all attempts and waits of one logical call: a retry that
could not start before it ends is not made, and an attempt never runs past it.

**Who drives the retries of AWS calls.** The rule: whoever has to see each attempt drives.
- The judge (Bedrock included) uses this policy in its own loop, with botocore's retries
  switched off (else attempts multiply: (max_retries + 1)²). It must see every attempt: each
  one holds a slot of the run-wide concurrency limit (botocore would sleep its backoff while
  holding it, starving every other case's judge calls), each retry is counted in the usage
  and cost reports, and both judge kinds must retry alike.
- The Bedrock agent target's stream errors arrive after the HTTP 200, where botocore no longer
  retries, so its own loop uses this policy too.
- Every other AWS target call (Lambda Invoke, Step Functions, the agent's and knowledge base's
  requests) is retried by botocore's ``standard`` mode with attempts and timeouts from the
  target's settings (:func:`evalrunner.targets._aws.client_config`): botocore knows each
  service's throttling and transient error codes and keeps a retry quota per client, nothing
  counts those attempts, and no slot is held.
"""

from __future__ import annotations

import random
import time
from collections.abc import Mapping
from dataclasses import dataclass
from email.utils import parsedate_to_datetime

#: HTTP statuses worth retrying; see the module docstring for why each one is here.
RETRY_STATUSES = frozenset({408, 429, 500, 502, 503, 504, 529})

#: First backoff window: 0.5 s, then 1 s, 2 s, ...
BACKOFF_BASE_SECONDS = 0.5
#: No single backoff wait is longer than this (nor longer than the per-attempt timeout).
BACKOFF_CAP_SECONDS = 20.0
#: No server-requested wait (Retry-After) is longer than this (nor the per-attempt timeout).
RETRY_AFTER_CAP_SECONDS = 60.0

#: The shortest deadline an attempt gets, however little budget is left.
MIN_ATTEMPT_SECONDS = 0.001

#: AWS error codes that mean "throttled": retried by the judge, named as throttling by targets.
AWS_THROTTLING_CODES = frozenset(
    {
        "Throttling",
        "ThrottlingException",
        "ThrottledException",
        "TooManyRequestsException",
        "RequestLimitExceeded",
        "ProvisionedThroughputExceededException",
        "ServiceQuotaExceededException",
        "ExecutionLimitExceeded",
    }
)
#: AWS error codes worth retrying (besides any status in RETRY_STATUSES).
AWS_TRANSIENT_CODES = AWS_THROTTLING_CODES | frozenset(
    {
        "ServiceUnavailableException",
        "InternalServerException",
        "ModelNotReadyException",
        "ModelTimeoutException",
    }
)


def is_retryable_status(status: int | None) -> bool:
    """Whether an HTTP status is worth another attempt (see :data:`RETRY_STATUSES`)."""
    return status in RETRY_STATUSES


class TransientError(Exception):
    """One attempt failed in a way that may succeed if repeated."""

    def __init__(self, message: str, *, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.retry_after = retry_after

    def __str__(self) -> str:
        return self.message


@dataclass(frozen=True)
class RetryPolicy:
    """How many attempts, how long each may take, how long to wait between them, and the
    budget for all of it."""

    max_retries: int
    #: Seconds one attempt may take, all of it (connect, send, the whole answer).
    timeout: float
    #: Seconds all attempts and waits together may take; None: attempts × (timeout + wait).
    total_timeout: float | None = None
    base: float = BACKOFF_BASE_SECONDS
    cap: float = BACKOFF_CAP_SECONDS
    #: Full jitter (uniform in [0, window]); False waits the whole window.
    jitter: bool = True
    retry_after_cap: float = RETRY_AFTER_CAP_SECONDS

    @property
    def attempts(self) -> int:
        return self.max_retries + 1

    @property
    def budget(self) -> float:
        """``total_timeout``, or the most attempts and capped waits could take without one."""
        if self.total_timeout is not None:
            return self.total_timeout
        return (2 * self.max_retries + 1) * self.timeout

    def delay(self, retry: int, retry_after: float | None = None) -> float:
        """Seconds to wait before retry number ``retry`` (0-based).

        The server's Retry-After wins when given (capped); otherwise the exponential window
        min(cap, timeout, base * 2**retry), drawn uniformly from [0, window] with jitter.
        """
        if retry_after is not None and retry_after >= 0:
            return min(retry_after, self.retry_after_cap, self.timeout)
        window = max(min(self.cap, self.timeout, self.base * (2**retry)), 0.0)
        return random.uniform(0, window) if self.jitter else window

    def start(self) -> RetryClock:
        """The clock of one logical call, started now."""
        return RetryClock(self)


class RetryClock:
    """One logical call under a policy: how long the next attempt may take, and whether (and
    after how long a wait) another attempt is made. Callers keep their own loop, because what
    they do around each attempt differs (a judge holds a slot and counts retries)."""

    def __init__(self, policy: RetryPolicy) -> None:
        self.policy = policy
        self.ends = time.monotonic() + policy.budget
        #: True once a retry was refused because the budget ran out (not the retry count).
        self.out_of_budget = False

    def attempt_seconds(self) -> float:
        """The deadline for the attempt about to start: the timeout, or less when the budget
        ends sooner."""
        # Never zero: a retry starts only with budget left, but its sleep may overshoot a
        # little, and a zero timeout means "no timeout" to some clients, an error to others.
        return max(MIN_ATTEMPT_SECONDS, min(self.policy.timeout, self.ends - time.monotonic()))

    def next_wait(self, attempts_made: int, retry_after: float | None = None) -> float | None:
        """Seconds to wait before the next attempt, or None when none is left: all
        ``max_retries`` are used, or the wait would end at or past the budget."""
        if attempts_made > self.policy.max_retries:
            return None
        wait = self.policy.delay(attempts_made - 1, retry_after)
        if time.monotonic() + wait >= self.ends:
            self.out_of_budget = True
            return None
        return wait


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
    return max(0.0, when.timestamp() - time.time())
