"""The in-process scripted judge every judge-metric test uses: no network, no model.

(The loopback OpenAI-compatible server, for tests of the real clients, is
:mod:`tests.support.judge_stub`.)

    judge = FakeJudge()
    judge.reply("statements", {"statements": ["a", "b"]}, when="text of the answer")
    judge.reply("faithfulness verdicts", {"verdicts": [...]})
    evaluator = MyEvaluator(judge=judge)

    judge = FakeJudge.scripted({"GEval": {"score": 4, "reason": "ok"}})  # by purpose, no cache

Replies are chosen by ``purpose``: the first rule registered with a ``when`` substring found in
the prompt's user message wins, else the rule without ``when``. A reply is a dict or list
(validated with the schema, like a real client's parsed JSON), a JSON string, a pydantic
instance, an exception instance (raised), a ``(reply, top_logprobs)`` pair (the logprobs come
back only when asked for), or a callable of the messages returning one of these. Validation
errors become :class:`JudgeParseError`, as after a real client's failed repair.

Like the real clients, it caches by content (model + schema name + messages) unless
``cache=False``; ``calls`` records every ask (thread-safe: evaluators may run cases in
parallel) and ``billed`` counts those that missed the cache.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ValidationError

from evalrunner.judge.base import (
    Judge,
    JudgeParseError,
    JudgeReply,
    JudgeUsage,
    Message,
    record_case_usage,
)


@dataclass
class FakeCall:
    """One ask the fake judge received."""

    purpose: str
    messages: list[Message]
    schema: type[BaseModel]
    cached: bool
    logprobs: bool = False

    @property
    def system(self) -> str:
        return next((m.content for m in self.messages if m.role == "system"), "")

    @property
    def prompt(self) -> str:
        """The user message."""
        return next((m.content for m in reversed(self.messages) if m.role == "user"), "")


class FakeJudge(Judge):
    def __init__(self, *, cache: bool = True, model: str = "fake-judge") -> None:
        super().__init__()
        self.model = model
        self.cache_enabled = cache
        self.calls: list[FakeCall] = []
        self._rules: dict[str, list[tuple[str | None, Any]]] = {}
        self._cache: dict[str, tuple[BaseModel, Any]] = {}
        self._lock = threading.Lock()

    @classmethod
    def scripted(cls, replies: Mapping[str, Any], *, model: str = "scripted") -> FakeJudge:
        """A judge answering each purpose with ``replies[purpose]``, without a cache (a
        callable reply is asked again for every call)."""
        judge = cls(cache=False, model=model)
        for purpose, value in replies.items():
            judge.reply(purpose, value)
        return judge

    def reply(self, purpose: str, value: Any, *, when: str | None = None) -> FakeJudge:
        """Script the reply to ``purpose`` (optionally only when the prompt contains ``when``).
        A reply without ``when`` replaces the purpose's previous one without ``when``."""
        rules = self._rules.setdefault(purpose, [])
        if when is None:
            rules[:] = [(w, v) for w, v in rules if w is not None]
        rules.append((when, value))
        return self

    @property
    def billed(self) -> int:
        """Calls that reached the "model" (cache misses)."""
        return sum(not c.cached for c in self.calls)

    def calls_for(self, purpose: str) -> list[FakeCall]:
        return [c for c in self.calls if c.purpose == purpose]

    def purposes(self) -> list[str]:
        """The purpose of every ask, in order (cache hits included)."""
        return [c.purpose for c in self.calls]

    def ask(
        self,
        messages: list[Message],
        schema: type[Any],
        *,
        purpose: str,
        logprobs: bool = False,
    ) -> JudgeReply[Any]:
        key = hashlib.sha256(
            json.dumps(
                [self.model, schema.__name__, [m.model_dump() for m in messages]],
                sort_keys=True,
            ).encode()
        ).hexdigest()
        with self._lock:
            hit = self._cache.get(key) if self.cache_enabled else None
            self.calls.append(FakeCall(purpose, messages, schema, hit is not None, logprobs))
        if hit is not None:
            usage = JudgeUsage(cached=1)
            self._account(usage)
            record_case_usage(purpose, usage)
            value, top = hit
            return JudgeReply(value, usage, cached=True, top_logprobs=top if logprobs else None)

        usage = JudgeUsage(calls=1, input_tokens=sum(len(m.content) // 4 for m in messages))
        try:
            value, top = self._value(purpose, messages, schema)
        except JudgeParseError:
            usage.parse_failures = 1
            raise
        finally:
            self._account(usage)
            record_case_usage(purpose, usage)
        if self.cache_enabled:
            with self._lock:
                self._cache[key] = (value, top)
        return JudgeReply(value, usage, top_logprobs=top if logprobs else None)

    def _value(
        self, purpose: str, messages: list[Message], schema: type[BaseModel]
    ) -> tuple[BaseModel, Any]:
        prompt = next((m.content for m in reversed(messages) if m.role == "user"), "")
        rules = self._rules.get(purpose, [])
        chosen = next((v for w, v in rules if w is not None and w in prompt), None)
        if chosen is None:
            chosen = next((v for w, v in rules if w is None), None)
        if chosen is None:
            raise LookupError(f"FakeJudge: no reply scripted for purpose {purpose!r}")
        if callable(chosen) and not isinstance(chosen, type):
            chosen = chosen(messages)
        if isinstance(chosen, BaseException):
            raise chosen
        chosen, top = chosen if isinstance(chosen, tuple) else (chosen, None)
        try:
            if isinstance(chosen, str):
                return schema.model_validate_json(chosen), top
            if isinstance(chosen, BaseModel):
                chosen = chosen.model_dump()
            return schema.model_validate(chosen), top
        except ValidationError as exc:
            raise JudgeParseError(
                f"{purpose}: reply does not match {schema.__name__}: {exc.errors()[0]['msg']}",
                raw=str(chosen),
            ) from exc
