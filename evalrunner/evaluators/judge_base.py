"""What every judge evaluator shares: the run's judge, handed over when the evaluator is
built, per-metric skips and failures, and the delimiting of a case's untrusted texts.

Judge evaluators (safety checks, quality rubrics, RAG metrics) subclass
:class:`JudgeEvaluator`; the pipeline builds them with :meth:`JudgeEvaluator.for_run`, so an
evaluator never exists half-configured and a test builds one with ``judge=`` in one line.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar, Self, TypeVar

from pydantic import BaseModel

from evalrunner.evaluators.base import (
    NO_JUDGE,
    Evaluator,
    Input,
    MetricResult,
    OptionsT,
    Requirement,
    RunServices,
    Sample,
    Unscored,
)
from evalrunner.judge.base import Judge, JudgeError, JudgeReply, Message
from evalrunner.judge.prompts import tagged, tagged_list

__all__ = ["JudgeEvaluator", "Unscored", "case_blocks", "nonblank_chunks"]

T = TypeVar("T", bound=BaseModel)

# --------------------------------------------------------------------------- prompt helpers


def case_blocks(
    sample: Sample,
    *,
    question: bool = True,
    expected_answer: bool = True,
    context: bool = True,
    answer: bool = True,
) -> list[str]:
    """The case's untrusted texts (those it has and the caller wants), each delimited by
    :func:`~evalrunner.judge.prompts.tagged` (chunks numbered from 1 inside <context>)."""
    parts = []
    if question and sample.has(Input.QUESTION):
        parts.append(tagged("question", sample.question))
    if expected_answer and sample.has(Input.EXPECTED_ANSWER):
        parts.append(tagged("expected_answer", sample.expected_answer or ""))
    if context and (chunks := nonblank_chunks(sample)):
        parts.append(tagged_list("context", "chunk", chunks))
    if answer and sample.answer is not None:
        parts.append(tagged("answer", sample.answer))
    return parts


def nonblank_chunks(sample: Sample) -> list[str]:
    """The retrieved chunks that have text (a blank chunk gives the judge nothing to judge)."""
    return [c for c in sample.contexts if c.strip()]


class JudgeEvaluator(Evaluator[OptionsT]):
    """Base of the judge evaluators: the judge call, and per-metric skips and failures.

    ``score`` may return :class:`Unscored` for some metrics; the others are thresholded as
    usual. A ``JudgeParseError`` that escapes ``score`` fails every metric of the case as a
    parsing failure (the base class does that).
    """

    requires: ClassVar[Requirement] = Requirement.JUDGE

    def __init__(
        self,
        thresholds: Mapping[str, float] | None = None,
        options: Mapping[str, Any] | None = None,
        *,
        judge: Judge | None = None,
        threshold: float | None = None,
    ) -> None:
        super().__init__(thresholds, options, threshold=threshold)
        #: The run's judge; None skips every metric with the reason (no judge configured).
        self.judge = judge

    @classmethod
    def for_run(
        cls,
        thresholds: Mapping[str, float] | None,
        options: Mapping[str, Any] | None,
        services: RunServices,
    ) -> Self:
        return cls(thresholds, options, judge=services.judge)

    def evaluate(self, sample: Sample) -> list[MetricResult]:
        if self.judge is None and not self.missing_inputs(sample):
            return self._all(status="skipped", reason=f"skipped: {NO_JUDGE}")
        return super().evaluate(sample)

    def ask(
        self,
        messages: list[Message],
        schema: type[T],
        *,
        purpose: str,
        logprobs: bool = False,
    ) -> JudgeReply[T]:
        if self.judge is None:  # evaluate() skips first; this is for direct score() calls
            raise JudgeError("no LLM judge is bound to this evaluator")
        return self.judge.ask(messages, schema, purpose=purpose, logprobs=logprobs)
