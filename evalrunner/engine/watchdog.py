"""Notices when an embedded execution can no longer progress, so a local run never hangs.

The interpreter reports a failed *state* through the execution's status, but not a dead
interpreter *thread* or a job that nobody will run: then the execution stays RUNNING forever.
Two signals tell those apart from a slow run:

- an interpreter thread ended with an exception (collected by ``moto_compat.ThreadFailures``);
- nothing happened for ``stall_timeout`` seconds: no pipeline function running and none
  finished. Between two tasks the interpreter needs milliseconds, so a gap of minutes with
  nothing in flight is a stuck interpreter, never a slow target (a slow target is a function
  in flight). A function in flight past Lambda's own limit is reported too, because Lambda
  would have killed it and the local engine cannot.
"""

from __future__ import annotations

import itertools
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from evalrunner.engine.moto_compat import ThreadFailures
from evalrunner.errors import ConfigError

#: Seconds with no pipeline function running or finishing before a run counts as stalled.
DEFAULT_STALL_TIMEOUT = 120.0
#: Lambda's maximum timeout: a deployed function running longer is killed. A local run holds
#: its functions to it only when asked (``--function-timeout``): a slow local judge may need
#: longer, and nothing kills a local function.
FUNCTION_TIMEOUT = 900.0
STALL_TIMEOUT_ENV = "EVALRUNNER_STALL_TIMEOUT"


def stall_timeout_from_env(default: float = DEFAULT_STALL_TIMEOUT) -> float:
    raw = os.environ.get(STALL_TIMEOUT_ENV)
    if raw is None or not raw.strip():
        return default
    try:
        value = float(raw)
    except ValueError:
        value = float("nan")
    if not (value > 0 and value != float("inf")):
        raise ConfigError(
            f"{STALL_TIMEOUT_ENV}={raw!r} is not a number of seconds above 0; "
            f"unset it for the default of {DEFAULT_STALL_TIMEOUT:g} s"
        )
    return value


@dataclass(frozen=True)
class Stall:
    """Why the execution can no longer progress, in words for the user."""

    reason: str


class Watchdog:
    """Tracks the pipeline functions the engine dispatches and the interpreter's threads."""

    def __init__(
        self,
        *,
        stall_timeout: float,
        function_timeout: float = FUNCTION_TIMEOUT,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.stall_timeout = stall_timeout
        self.function_timeout = function_timeout
        self.clock = clock
        self.threads = ThreadFailures()
        self._lock = threading.Lock()
        self._ids = itertools.count()
        self._in_flight: dict[int, tuple[str, float]] = {}
        self._last_activity = clock()
        self.finished = 0

    def track(self, name: str, handler: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
        """``handler``, reporting its start and end to the watchdog."""

        def tracked(event: Any, context: Any) -> Any:
            call = next(self._ids)
            with self._lock:
                self._in_flight[call] = (name, self.clock())
                self._last_activity = self.clock()
            try:
                return handler(event, context)
            finally:
                with self._lock:
                    del self._in_flight[call]
                    self._last_activity = self.clock()
                    self.finished += 1

        return tracked

    def check(self) -> Stall | None:
        failures = self.threads.failures
        if failures:
            first = failures[0]
            more = f" (and {len(failures) - 1} more)" if len(failures) > 1 else ""
            return Stall(
                f"an interpreter thread ({first.thread_name}) died with {first.error}{more}; "
                "the items it held will never finish"
            )
        now = self.clock()
        with self._lock:
            in_flight = list(self._in_flight.values())
            idle = now - self._last_activity
        overdue = [(n, now - t) for n, t in in_flight if now - t > self.function_timeout]
        if overdue:
            name, seconds = max(overdue, key=lambda pair: pair[1])
            return Stall(
                f"function {name} has been running for {seconds:.0f} s, past the "
                f"{self.function_timeout:.0f} s function limit (--function-timeout; "
                "deployed, Lambda's 900 s)"
            )
        if not in_flight and idle > self.stall_timeout:
            return Stall(
                f"nothing ran for {idle:.0f} s while the execution was still running "
                f"(stall timeout {self.stall_timeout:g} s; set --stall-timeout or "
                f"{STALL_TIMEOUT_ENV} to change it)"
            )
        return None


__all__ = [
    "DEFAULT_STALL_TIMEOUT",
    "STALL_TIMEOUT_ENV",
    "Stall",
    "Watchdog",
    "stall_timeout_from_env",
]
