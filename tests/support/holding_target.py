"""A loopback HTTP target that counts the calls it receives and the answers it sends, and from
call ``hold_at + 1`` on holds each call until :meth:`HoldingTarget.release` — what a slow
target looks like at the moment a run is stopped. The stop/resume tests and
``bench/bench_resume.py`` both measure runs against it."""

from __future__ import annotations

import threading
from collections.abc import Callable

from tests.support.loopback_http import Loopback, Reply, Seen


class HoldingTarget:
    def __init__(
        self, hold_at: int | None, answer: Callable[[str], str], hold_seconds: float = 120
    ) -> None:
        self.hold_at = hold_at  # None: never holds
        self.answer = answer
        self.hold_seconds = hold_seconds
        self.released = threading.Event()
        self.lock = threading.Lock()
        self.received: list[str] = []
        self.answered: list[str] = []
        self.server = Loopback(responder=self.respond)

    def respond(self, seen: Seen) -> Reply:
        question = str(seen.json()["question"])
        with self.lock:
            self.received.append(question)
            hold = (
                self.hold_at is not None
                and len(self.received) > self.hold_at
                and not self.released.is_set()
            )
        if hold:
            self.released.wait(self.hold_seconds)
            return Reply(status=503, body={"error": "held"})  # the client is gone by now
        with self.lock:
            self.answered.append(question)
        return Reply(body={"answer": self.answer(question)})

    def release(self) -> None:
        self.released.set()

    def close(self) -> None:
        self.release()
        self.server.close()
