"""A judge whose replies are written out in advance: for the evaluators' docstring examples
and for trying a judge metric's arithmetic without a model.

It speaks the real :class:`~evalrunner.judge.base.Judge` interface: every reply is validated
with the schema the metric asks with, exactly as a real client's parsed JSON is (a reply of
the wrong shape is a :class:`~evalrunner.judge.base.JudgeParseError`), and its usage is
counted. What it cannot do is judge: it answers each *purpose* (the step the metric names,
e.g. ``"statements"`` or ``"faithfulness verdicts"``) with the reply it was given.

>>> from pydantic import BaseModel
>>> class Score(BaseModel):
...     score: int
>>> judge = ScriptedJudge({"rating": {"score": 4}})
>>> judge.ask([], Score, purpose="rating").value
Score(score=4)
>>> judge.usage.calls
1
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from evalrunner.judge.base import (
    Judge,
    JudgeError,
    JudgeParseError,
    JudgeReply,
    JudgeUsage,
    Message,
    record_case_usage,
)

T = TypeVar("T", bound=BaseModel)

#: One reply: the JSON object a model would write, as a mapping.
Reply = Mapping[str, Any]


class ScriptedJudge(Judge):
    """Answers ``replies[purpose]``: one reply for every ask of that purpose, or a sequence
    of replies given in turn (the last one repeated), for a step asked once per item."""

    def __init__(self, replies: Mapping[str, Reply | Sequence[Reply]], *, model: str = "scripted"):
        super().__init__()
        self.model = model
        self._replies = {
            purpose: list(value) if isinstance(value, Sequence) else [value]
            for purpose, value in replies.items()
        }
        self._asked: dict[str, int] = {}
        #: The replies as given, by purpose (to script another judge from this one).
        self.replies: dict[str, Reply | Sequence[Reply]] = dict(replies)
        self._turn_lock = threading.Lock()

    def ask(
        self,
        messages: list[Message],
        schema: type[T],
        *,
        purpose: str,
        logprobs: bool = False,
    ) -> JudgeReply[T]:
        replies = self._replies.get(purpose)
        if not replies:
            raise JudgeError(
                f"ScriptedJudge has no reply for {purpose!r}; give one in its replies "
                f"(it has: {', '.join(sorted(self._replies)) or 'none'})"
            )
        with self._turn_lock:
            turn = self._asked.get(purpose, 0)
            self._asked[purpose] = turn + 1
        usage = JudgeUsage(calls=1)
        self._account(usage)
        record_case_usage(purpose, usage)
        reply = replies[min(turn, len(replies) - 1)]
        try:
            value = schema.model_validate(reply)
        except ValidationError as exc:
            raise JudgeParseError(
                f"{purpose}: the scripted reply does not match {schema.__name__}: "
                f"{exc.errors()[0]['msg']}",
                raw=str(reply),
            ) from exc
        return JudgeReply(value, usage)
