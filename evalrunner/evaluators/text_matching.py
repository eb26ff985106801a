"""Text matching (H2O's "tokens presence"): the case's condition checked on answer and context.

The condition (see :mod:`evalrunner.evaluators.conditions`) is checked twice: on the answer
and on the retrieved context (all chunks joined with blank lines). Each metric is a per-case
0/1 score, so its run average is the H2O rate of the same name:

- ``Model passes`` (primary): the answer satisfies the condition.
- ``Model failures``: it does not. Passes + failures + parse failures on the answer = 1.
- ``Retrieval failures``: the context does not satisfy the condition, so the answer could not
  have been grounded in it. A case with no retrieved context at all counts as a retrieval
  failure (and says so): nothing was retrieved that could carry the required text.
- ``Generation failures``: the context satisfies the condition but the answer does not, i.e.
  the model lost what retrieval found.
- ``Parse failures``: the condition could not be evaluated in time (a regex operand timed out
  on the answer or the context). Such a case scores 0 on the other four metrics, since none
  of them can be decided.

All but the first are lower-is-better with threshold 0.5, so a failure is a failed metric.
"""

from __future__ import annotations

from collections.abc import Mapping

from pydantic import BaseModel, ConfigDict, Field

from evalrunner.evaluators.base import Evaluator, Input, MetricSpec, Sample, Scored
from evalrunner.evaluators.conditions import (
    REGEX_TIMEOUT,
    ConditionError,
    ConditionTimeout,
    parse_condition,
)
from evalrunner.evaluators.registry import register

#: Where this module's evaluators come in the catalog (see evaluators.registry).
CATALOG_POSITION = 20

_PASSES = "Model passes"
_FAILURES = "Model failures"
_RETRIEVAL = "Retrieval failures"
_GENERATION = "Generation failures"
_PARSE = "Parse failures"


class TextMatchingOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")

    #: Seconds one regex operand may run on one text before it counts as a parse failure.
    regex_timeout_s: float = Field(default=REGEX_TIMEOUT, gt=0, le=1)


def _failure(name: str, description: str) -> MetricSpec:
    return MetricSpec(name, description, higher_is_better=False, threshold=0.5, kind="pass_fail")


@register
class TextMatching(Evaluator[TextMatchingOptions]):
    """The case's condition checked on the answer and on the retrieved context, so a failure says
    whose it is: retrieval (the context lacks it) or generation (the context has it, the answer
    lost it).

    >>> sample = Sample(question="Capital of France?", answer="It is Lyon.",
    ...                 contexts=["Paris is the capital of France."], condition='"Paris"')
    >>> for r in TextMatching().evaluate(sample):
    ...     print(f"{r.metric}: {r.score:.0f} - {r.reason}")
    Model passes: 0 - the answer fails the condition: does not contain "Paris"
    Model failures: 1 - the answer fails the condition: does not contain "Paris"
    Retrieval failures: 0 - the context (1 chunk) satisfies it: contains "Paris"
    Generation failures: 1 - the context satisfies the condition (contains "Paris") but the
        answer does not: does not contain "Paris"
    Parse failures: 0 - the condition was evaluated in time
    """

    name = "Text matching"
    aliases = ("Tokens presence",)
    description = (
        "The case's condition (required text, regexps, AND/OR/NOT) checked on the answer and "
        "on the retrieved context; separates retrieval from generation failures."
    )
    inputs = frozenset({Input.ANSWER, Input.CONDITION})
    metrics = (
        MetricSpec(
            _PASSES,
            "the answer satisfies the condition",
            threshold=0.5,
            primary=True,
            kind="pass_fail",
        ),
        _failure(_FAILURES, "the answer does not satisfy the condition"),
        _failure(_RETRIEVAL, "the retrieved context does not satisfy the condition (or is empty)"),
        _failure(_GENERATION, "the context satisfies the condition but the answer does not"),
        _failure(_PARSE, "the condition could not be evaluated in time (regex timeout)"),
    )

    @classmethod
    def check_case(cls, sample: Sample) -> list[str]:
        if not sample.has(Input.CONDITION):
            return []
        assert sample.condition is not None
        try:
            parse_condition(sample.condition)
        except ConditionError as exc:
            return [f"condition: {exc}"]
        return []

    def score(self, sample: Sample) -> Mapping[str, Scored]:
        assert sample.answer is not None and sample.condition is not None
        condition = parse_condition(sample.condition)
        timeout = self.options.regex_timeout_s

        answer_timeout: ConditionTimeout | None = None
        answer_ok, answer_why = False, ""
        try:
            answer_ok, answer_why = condition.check(sample.answer, timeout=timeout)
        except ConditionTimeout as exc:
            answer_timeout = exc

        chunks = [c for c in sample.contexts if c.strip()]
        context_timeout: ConditionTimeout | None = None
        context_ok, context_why = False, ""
        if chunks:
            try:
                context_ok, context_why = condition.check("\n\n".join(chunks), timeout=timeout)
            except ConditionTimeout as exc:
                context_timeout = exc

        out: dict[str, Scored] = {}
        if answer_timeout is not None:
            why = f"undecided: the condition timed out on the answer ({answer_timeout})"
            out[_PASSES] = Scored(0.0, why)
            out[_FAILURES] = Scored(0.0, why)
        elif answer_ok:
            out[_PASSES] = Scored(1.0, f"the answer satisfies the condition: {answer_why}")
            out[_FAILURES] = Scored(0.0, f"the answer satisfies the condition: {answer_why}")
        else:
            out[_PASSES] = Scored(0.0, f"the answer fails the condition: {answer_why}")
            out[_FAILURES] = Scored(1.0, f"the answer fails the condition: {answer_why}")

        n = f"{len(chunks)} chunk{'s' if len(chunks) != 1 else ''}"
        if not chunks:
            out[_RETRIEVAL] = Scored(1.0, "no retrieved context to satisfy the condition")
        elif context_timeout is not None:
            out[_RETRIEVAL] = Scored(
                0.0, f"undecided: the condition timed out on the context ({context_timeout})"
            )
        elif context_ok:
            out[_RETRIEVAL] = Scored(0.0, f"the context ({n}) satisfies it: {context_why}")
        else:
            out[_RETRIEVAL] = Scored(1.0, f"the context ({n}) fails the condition: {context_why}")

        if answer_timeout is not None or context_timeout is not None:
            out[_GENERATION] = Scored(0.0, "undecided: the condition timed out")
        elif not chunks:
            out[_GENERATION] = Scored(
                0.0, "no retrieved context, so no failure can be put on generation"
            )
        elif not context_ok:
            out[_GENERATION] = Scored(
                0.0, f"not a generation failure: the context fails too ({context_why})"
            )
        elif answer_ok:
            out[_GENERATION] = Scored(0.0, "the answer keeps what the context satisfies")
        else:
            out[_GENERATION] = Scored(
                1.0,
                f"the context satisfies the condition ({context_why}) but the answer does "
                f"not: {answer_why}",
            )

        timeouts = [
            f"on the {where}: {exc}"
            for where, exc in (("answer", answer_timeout), ("context", context_timeout))
            if exc is not None
        ]
        if timeouts:
            out[_PARSE] = Scored(1.0, "the condition timed out " + "; ".join(timeouts))
        else:
            out[_PARSE] = Scored(0.0, "the condition was evaluated in time")
        return out
