"""One urllib3 pool per HTTP-speaking target, with bounded retries and user-facing errors.

urllib3 rather than requests or httpx: it is already in every Lambda runtime (botocore needs
it), it is thread-safe with one PoolManager, and its Retry implements exactly the policy we
want (retry 429/5xx and timeouts, POST included, honouring Retry-After).
"""

from __future__ import annotations

import inspect
import json
from dataclasses import dataclass
from typing import Any

import urllib3
from urllib3.exceptions import (
    ConnectTimeoutError,
    HTTPError,
    MaxRetryError,
    NewConnectionError,
    ReadTimeoutError,
)
from urllib3.util import Retry, Timeout

from evalrunner.errors import TargetError, TargetTimeout
from evalrunner.targets._common import snippet

RETRY_STATUSES = (429, 500, 502, 503, 504)
DEFAULT_BACKOFF_FACTOR = 0.5
#: Enough connections for the local engine's concurrency without blocking.
POOL_MAXSIZE = 50
_HAS_RETRY_AFTER_MAX = "retry_after_max" in inspect.signature(Retry.__init__).parameters


@dataclass(frozen=True)
class HttpResult:
    status: int
    body: bytes
    attempts: int
    content_type: str
    location: str = ""

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
    """Sends JSON, returns the final response; the caller decides what a status means."""

    def __init__(
        self,
        *,
        timeout: float,
        retries: int,
        backoff_factor: float = DEFAULT_BACKOFF_FACTOR,
    ) -> None:
        self.timeout_seconds = timeout
        extra: dict[str, Any] = {}
        if _HAS_RETRY_AFTER_MAX:
            # A server asking us to wait longer than the per-call timeout is not waited for.
            extra["retry_after_max"] = max(1, int(timeout))
        self.retry = Retry(
            total=retries,
            connect=retries,
            read=retries,
            status=retries,
            other=0,
            redirect=False,  # a redirected POST turns into a GET: report the 3xx instead
            backoff_factor=backoff_factor,
            status_forcelist=RETRY_STATUSES,
            allowed_methods=None,  # POST too: evaluation questions are safe to ask twice
            respect_retry_after_header=True,
            raise_on_status=False,  # keep the last response so its status and body are shown
            **extra,
        )
        self.timeout = Timeout(connect=timeout, read=timeout, total=timeout)
        self.pool = urllib3.PoolManager(maxsize=POOL_MAXSIZE, retries=self.retry)

    def send(
        self, method: str, url: str, payload: Any, headers: dict[str, str], what: str
    ) -> HttpResult:
        """One logical call (retries included); ``what`` names it in errors, without secrets."""
        all_headers = {"Content-Type": "application/json", "Accept": "application/json"}
        all_headers.update(headers)
        try:
            response = self.pool.request(
                method,
                url,
                body=json.dumps(payload).encode("utf-8"),
                headers=all_headers,
                retries=self.retry,
                timeout=self.timeout,
            )
        except MaxRetryError as exc:
            raise self._failure(exc.reason, what, self.retry.total or 0) from exc
        except HTTPError as exc:
            raise self._failure(exc, what, 0) from exc
        history = response.retries.history if response.retries else ()
        return HttpResult(
            status=response.status,
            body=response.data,
            attempts=len(history) + 1,
            content_type=response.headers.get("Content-Type", ""),
            location=response.headers.get("Location", ""),
        )

    def _failure(self, reason: Any, what: str, retries: int) -> TargetError:
        attempts = f"{retries + 1} attempt(s)"
        # Checked first: urllib3 makes NewConnectionError a subclass of ConnectTimeoutError.
        if isinstance(reason, NewConnectionError):
            return TargetError(
                f"{what}: could not connect ({attempts}): {reason}. Check the URL and "
                "that the service is running and reachable from where evalrunner runs.",
                retryable=True,
            )
        if isinstance(reason, ReadTimeoutError | ConnectTimeoutError | TimeoutError):
            return TargetTimeout(
                f"{what} did not answer within timeout_seconds={self.timeout_seconds:g} "
                f"({attempts}). Raise target.timeout_seconds if it is just slow.",
                retryable=True,
            )
        return TargetError(f"{what}: request failed ({attempts}): {reason}", retryable=True)


def status_error(result: HttpResult, what: str, *, auth_hint: str = "") -> TargetError:
    """A non-2xx final response as an error naming the status, attempts and body excerpt."""
    hint = f" {auth_hint}" if auth_hint and result.status in (401, 403) else ""
    if 300 <= result.status < 400:
        hint = f" It redirects to {result.location or '(no Location)'}: use that URL."
    return TargetError(
        f"{what} answered HTTP {result.status} after {result.attempts} attempt(s): "
        f"{snippet(result.body) or '(empty body)'}{hint}",
        retryable=result.status in RETRY_STATUSES,
    )
