"""Stopping a local run: SIGTERM and Ctrl-C turned into a stop in the thread that follows the
execution, and the gate that keeps a stopped run's target from being called again."""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from evalrunner.targets.base import ConversationSession, Target, TargetResponse


class StopRequested(BaseException):
    """SIGTERM or SIGINT during a local run: raised in the main thread where it waits for the
    execution, like KeyboardInterrupt (a BaseException, so no ``except Exception`` on the way
    swallows it)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


SIGNAL_REASONS = {
    signal.SIGTERM: "SIGTERM: the run was asked to stop",
    signal.SIGINT: "interrupted (Ctrl-C)",
}


@contextmanager
def stop_on_signals() -> Iterator[None]:
    """While the run is followed, SIGTERM and SIGINT stop it with its reports written (the
    handlers before are put back at once: a second Ctrl-C while the reports are written
    aborts as usual). Only on the main thread, where Python delivers signals."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum: int, frame: Any) -> None:
        raise StopRequested(SIGNAL_REASONS.get(signal.Signals(signum), f"signal {signum}"))

    previous = {sig: signal.signal(sig, stop) for sig in SIGNAL_REASONS}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


class StopGate:
    """Closed when a run stops: a target call that has not started by then waits for good
    (in a daemon thread of the interpreter, which ends with the process), so no case is
    answered after the stopped run's reports were made, and none is paid for twice when it
    is resumed. A call already under way finishes, and its record is saved."""

    def __init__(self) -> None:
        self._stopped = threading.Event()
        self._never = threading.Event()

    def stop(self) -> None:
        self._stopped.set()

    def pass_through(self) -> None:
        if self._stopped.is_set():
            self._never.wait()


class GatedTarget(Target):
    """A run's target behind its :class:`StopGate` (the kind's own class does the work)."""

    def __init__(self, inner: Target, gate: StopGate) -> None:  # no spec parsing: inner's
        self.inner, self.gate = inner, gate
        self.spec, self.options = inner.spec, inner.options

    @property
    def name(self) -> str:
        return self.inner.name

    def invoke(self, case: Any) -> TargetResponse:
        self.gate.pass_through()
        return self.inner.invoke(case)

    def invoke_turn(self, case: Any, session: ConversationSession) -> TargetResponse:
        self.gate.pass_through()
        return self.inner.invoke_turn(case, session)

    def __getattr__(self, name: str) -> Any:  # a kind's own extras (a probe, its client)
        if name.startswith("__") or name == "inner":
            raise AttributeError(name)
        return getattr(self.inner, name)
