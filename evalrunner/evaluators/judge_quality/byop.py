"""``BYOP`` (bring your own prompt): the judge answers your yes/no question about a case.

Option ``prompt``: a template over ``{question}``, ``{expected_answer}``, ``{context}`` and
``{answer}`` (``{{``/``}}`` for literal braces); other placeholders are refused when the
options are validated. The judge answers it true or false with a reason. Metric ``BYOP``: 1
for true, pass rate, threshold 0.5. A case that lacks a text the template uses is skipped.
"""

from __future__ import annotations

import string
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, field_validator

from evalrunner.evaluators.base import Input, MetricSpec, Sample, Scored, SkipCase
from evalrunner.evaluators.judge_base import JudgeEvaluator, nonblank_chunks
from evalrunner.evaluators.judge_metrics import Declarable, judge_kind
from evalrunner.evaluators.registry import register
from evalrunner.judge.base import Judge, Message
from evalrunner.judge.prompts import build, tagged, tagged_list

__all__ = ["BYOP", "BYOP_PLACEHOLDERS", "BYOPOptions", "template_fields"]


#: Placeholders a BYOP template may use, and the case input each needs.
BYOP_PLACEHOLDERS: Mapping[str, Input] = {
    "question": Input.QUESTION,
    "expected_answer": Input.EXPECTED_ANSWER,
    "context": Input.CONTEXTS,
    "answer": Input.ANSWER,
}


def template_fields(template: str) -> list[str]:
    """The placeholders of ``template``; raises ValueError for unknown ones, positional
    ``{}``, conversions, format specs and unbalanced braces."""
    fields: list[str] = []
    try:
        parsed = list(string.Formatter().parse(template))
    except ValueError as exc:
        raise ValueError(
            f"prompt is not a valid template ({exc}); write {{{{ and }}}} for literal braces"
        ) from exc
    for _, name, spec, conversion in parsed:
        if name is None:
            continue
        if name not in BYOP_PLACEHOLDERS:
            raise ValueError(
                f"unknown placeholder {{{name}}} in prompt; valid: "
                + ", ".join(f"{{{k}}}" for k in BYOP_PLACEHOLDERS)
                + " (write {{ and }} for literal braces)"
            )
        if spec or conversion:
            raise ValueError(f"placeholder {{{name}}} takes no conversion or format spec")
        if name not in fields:
            fields.append(name)
    return fields


class BYOPOptions(BaseModel):
    """Run-wide settings of BYOP: the prompt template."""

    model_config = ConfigDict(extra="forbid")

    #: A yes/no evaluation question over {question}, {expected_answer}, {context}, {answer}.
    prompt: str

    @field_validator("prompt")
    @classmethod
    def _valid_template(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("prompt is empty")
        if not template_fields(value):
            raise ValueError(
                "prompt uses no placeholder; put the case's texts in it with "
                + ", ".join(f"{{{k}}}" for k in BYOP_PLACEHOLDERS)
            )
        return value


class TrueFalseVerdict(BaseModel):
    model_config = ConfigDict(extra="ignore")

    reason: str
    verdict: bool


@judge_kind("byop")
@register
class BYOP(Declarable, JudgeEvaluator[BYOPOptions]):
    """Your own yes/no question about a case, answered by the judge: the template's
    placeholders are filled with the case's texts (delimited, so instructions inside them are
    data), and the case passes when the judge answers true. Here a
    :class:`~evalrunner.judge.scripted.ScriptedJudge` gives the reply a model would write:

    >>> from evalrunner.judge.scripted import ScriptedJudge
    >>> judge = ScriptedJudge({"BYOP": {"reason": "it names Shakespeare", "verdict": True}})
    >>> byop = BYOP(options={"prompt": "Does the answer {answer} name the author?"}, judge=judge)
    >>> for r in byop.evaluate(Sample(question="Who wrote Hamlet?", answer="Shakespeare.")):
    ...     print(f"{r.metric}: {r.score:.2f} {r.reason}")
    BYOP: 1.00 judge answered true: it names Shakespeare

    With ``name=`` it is a metric of its own (:mod:`evalrunner.evaluators.judge_metrics`),
    with its column and gate.
    """

    judge_kind = "byop"
    name = "BYOP"
    aliases = ("Bring your own prompt", "BYOP: Bring your own prompt", "Parameterizable BYOP")
    description = (
        "LLM judge answers your prompt template (over question, expected answer, context, "
        "answer) true or false; pass rate."
    )
    inputs = frozenset()
    metrics = (
        MetricSpec(
            "BYOP",
            "the judge answered the prompt true",
            threshold=0.5,
            primary=True,
            kind="pass_fail",
        ),
    )

    def __init__(
        self,
        thresholds: Mapping[str, float] | None = None,
        options: Mapping[str, Any] | None = None,
        *,
        judge: Judge | None = None,
        threshold: float | None = None,
        name: str | None = None,
        prompt: str | None = None,
    ) -> None:
        """``prompt``: the option, the short form for Python; ``name``: a named metric of
        its own (see the class)."""
        chosen = {**(options or {}), **({} if prompt is None else {"prompt": prompt})}
        if self.declaration is not None:  # a named copy: its declared settings
            chosen = {} if options is None else dict(options)
        super().__init__(
            thresholds, {**self.default_options, **chosen}, threshold=threshold, judge=judge
        )
        self.chosen_options = chosen
        self._fields = template_fields(self.options.prompt)

    def missing_inputs(self, sample: Sample) -> list[Input]:
        return [BYOP_PLACEHOLDERS[f] for f in self._fields if not sample.has(BYOP_PLACEHOLDERS[f])]

    def messages(self, sample: Sample) -> list[Message]:
        texts = {
            "question": lambda: tagged("question", sample.question),
            "expected_answer": lambda: tagged("expected_answer", sample.expected_answer or ""),
            "context": lambda: tagged_list("context", "chunk", nonblank_chunks(sample)),
            "answer": lambda: tagged("answer", sample.answer or ""),
        }
        prompt = self.options.prompt.format(**{f: texts[f]() for f in self._fields})
        return build(
            "Answer the evaluation question below about one case of a question-answering "
            f"assistant with true or false.\n\n{prompt}",
            [],
            'Reply as {"reason": "<one or two sentences>", "verdict": <true or false>}.',
        )

    def score(self, sample: Sample) -> Mapping[str, Scored]:
        if "context" in self._fields and not nonblank_chunks(sample):
            raise SkipCase("every retrieved chunk is blank")
        reply = self.ask(self.messages(sample), TrueFalseVerdict, purpose="BYOP")
        verdict = reply.value.verdict
        return {
            self.primary_metric().name: Scored(
                float(verdict),
                f"judge answered {'true' if verdict else 'false'}: {reply.value.reason}",
            )
        }
