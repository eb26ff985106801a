"""The judge contract every judge metric is written against.

A judge turns messages into a pydantic-validated answer. Implementations own transport,
retries with backoff and jitter, timeouts, the run-wide concurrency limit, the response cache
and the repair-once-then-give-up handling of output that does not parse. Metrics never see
raw text: they get a model instance or a :class:`JudgeParseError`, which they report as a
parsing failure (never NaN, never a silent 0).
"""

from __future__ import annotations

import copy
import threading
from abc import ABC, abstractmethod
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Generic, Literal, TypeVar

from pydantic import BaseModel

from evalrunner.errors import EvalRunnerError

T = TypeVar("T", bound=BaseModel)


class Message(BaseModel):
    role: Literal["system", "user", "assistant"]
    content: str


class JudgeError(EvalRunnerError):
    """The judge could not be reached or kept failing (after its retries)."""

    code = "JudgeError"


class JudgeDeadlineError(JudgeError):
    """A judge call (or its retry) was not made: it could not finish before the caller's
    deadline (:meth:`Judge.with_deadline`). Not remembered as the key's failure: with more
    time the same ask may well succeed."""

    code = "JudgeDeadlineError"


class JudgeParseError(JudgeError):
    """The judge's output did not validate, even after one repair attempt."""

    code = "JudgeParseError"

    def __init__(self, message: str, *, raw: str = "") -> None:
        super().__init__(message)
        self.raw = raw[:2000]


@dataclass
class JudgeUsage:
    """Calls and tokens; ``cached`` calls cost nothing and are counted apart."""

    calls: int = 0
    cached: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    retries: int = 0
    parse_failures: int = 0

    def add(self, other: JudgeUsage) -> None:
        self.calls += other.calls
        self.cached += other.cached
        self.input_tokens += other.input_tokens
        self.output_tokens += other.output_tokens
        self.retries += other.retries
        self.parse_failures += other.parse_failures

    def as_dict(self) -> dict[str, int]:
        return dict(self.__dict__)


@dataclass
class JudgeReply(Generic[T]):
    value: T
    usage: JudgeUsage
    cached: bool = False
    #: Log-probabilities of the first output tokens, when the judge returned them
    #: ([{token: logprob, ...}] per position), for probability-weighted scores (GEval).
    top_logprobs: list[dict[str, float]] | None = None


class Judge(ABC):
    """A configured judge model. Thread-safe: cases are judged concurrently."""

    #: model id, part of every cache key
    model: str
    #: A ``time.monotonic()`` instant no call may run past (None: none); see
    #: :meth:`with_deadline`.
    deadline: float | None = None

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.usage = JudgeUsage()  # the whole run, this process

    @abstractmethod
    def ask(
        self,
        messages: list[Message],
        schema: type[T],
        *,
        purpose: str,
        logprobs: bool = False,
    ) -> JudgeReply[T]:
        """One judgement: the reply validated as ``schema``. ``purpose`` names the step
        (e.g. "statements", "faithfulness verdicts") for accounting and error messages.
        Raises JudgeParseError (after one repair attempt) or JudgeError."""

    def with_deadline(self, deadline: float | None) -> Judge:
        """This judge (the same usage, cache and limits) asking no call, and no retry, that
        could not finish before ``deadline`` (a ``time.monotonic()`` instant; None: none),
        where each attempt may take the judge's timeout: such a call raises
        :class:`JudgeDeadlineError` instead. A step with a hard time limit (Prepare's
        Lambda) fails what does not fit rather than being killed mid-call. A judge that
        calls nothing (a dry run, a script) has nothing to stop."""
        bound = copy.copy(self)
        bound.deadline = deadline
        return bound

    def _account(self, usage: JudgeUsage) -> None:
        with self._lock:
            self.usage.add(usage)


@dataclass
class CaseUsage:
    """Per-case accounting, filled by the metrics of one case (see ``judge_usage``). Thread-
    safe: a case's judge metrics run together (:func:`evalrunner.pipeline.scoring.evaluate_all`)."""

    usage: JudgeUsage = field(default_factory=JudgeUsage)
    by_purpose: dict[str, int] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def record(self, purpose: str, reply_usage: JudgeUsage) -> None:
        with self._lock:
            self.usage.add(reply_usage)
            self.by_purpose[purpose] = self.by_purpose.get(purpose, 0) + reply_usage.calls

    def as_dict(self) -> dict[str, Any]:
        with self._lock:
            return {**self.usage.as_dict(), "by_purpose": dict(self.by_purpose)}


#: The case being judged in this thread/task; judges record each call into it.
CURRENT_CASE: ContextVar[CaseUsage | None] = ContextVar("evalrunner_judge_case", default=None)


def record_case_usage(purpose: str, usage: JudgeUsage) -> None:
    """Called by Judge implementations after every ``ask`` (cached or not)."""
    case = CURRENT_CASE.get()
    if case is not None:
        case.record(purpose, usage)
