"""``Summarization (judge)``: the answer as a summary, scored by the judge.

The reference summary is the expected answer and the source is the retrieved context. One
call scores coverage (of the reference's key points) and faithfulness (to the source) from 1
to 5; each is reported normalised, (s − 1) / 4: ``Summary coverage (judge)``, ``Summary
faithfulness (judge)``, and their mean ``Summarization (judge)`` (primary). A case with only
one of reference and source gets the metric it can have; the other is skipped. Thresholds
0.5.
"""

from __future__ import annotations

from collections.abc import Mapping

from pydantic import BaseModel, ConfigDict, Field

from evalrunner.evaluators.base import Input, MetricSpec, Sample, Scored, SkipCase
from evalrunner.evaluators.judge_base import (
    JudgeEvaluator,
    Unscored,
    case_blocks,
    nonblank_chunks,
)
from evalrunner.evaluators.judge_quality.scale import normalised
from evalrunner.evaluators.registry import register
from evalrunner.judge.base import Message
from evalrunner.judge.prompts import build

__all__ = ["SummarizationJudge"]


_COVERAGE = "Summary coverage (judge)"
_FAITHFULNESS = "Summary faithfulness (judge)"
_SUMMARIZATION = "Summarization (judge)"


class SummaryCoverage(BaseModel):
    model_config = ConfigDict(extra="ignore")

    coverage_reason: str
    coverage: int = Field(ge=1, le=5)


class SummaryFaithfulness(BaseModel):
    model_config = ConfigDict(extra="ignore")

    faithfulness_reason: str
    faithfulness: int = Field(ge=1, le=5)


class SummaryCoverageAndFaithfulness(BaseModel):
    model_config = ConfigDict(extra="ignore")

    coverage_reason: str
    coverage: int = Field(ge=1, le=5)
    faithfulness_reason: str
    faithfulness: int = Field(ge=1, le=5)


_COVERAGE_RUBRIC = (
    "coverage (1–5): how many of the key points of the reference summary inside "
    "<expected_answer> the summary inside <answer> conveys. 5: all key points; 4: all but "
    "a minor one; 3: about half; 2: few; 1: none."
)
_FAITHFULNESS_RUBRIC = (
    "faithfulness (1–5): whether everything the summary inside <answer> says is supported "
    "by the source document inside <context>. 5: every statement is supported; 4: one minor "
    "unsupported detail; 3: some unsupported or distorted statements; 2: many; 1: mostly "
    "unsupported or contradicting the source."
)


@register
class SummarizationJudge(JudgeEvaluator):
    """The answer read as a summary: coverage of the reference summary (the expected answer)
    and faithfulness to the source (the retrieved context), each 1–5 from one judge call,
    normalised; the primary score is their mean. A case without a reference (or a source)
    gets the other part only. Here a :class:`~evalrunner.judge.scripted.ScriptedJudge`
    gives the reply a model would write:

    >>> from evalrunner.judge.scripted import ScriptedJudge
    >>> judge = ScriptedJudge({"Summarization (judge)": {
    ...     "coverage_reason": "keeps the day and time, drops the room", "coverage": 4,
    ...     "faithfulness_reason": "all of it is in the source", "faithfulness": 5}})
    >>> sample = Sample(question="Summarise the note.",
    ...                 answer="The meeting is now on Tuesday at 10:00.",
    ...                 contexts=["The meeting moved to Tuesday at 10:00 in room 4."],
    ...                 expected_answer="Meeting moved to Tuesday 10:00, room 4.")
    >>> for r in SummarizationJudge(judge=judge).evaluate(sample):
    ...     print(f"{r.metric}: {r.score:.3f}")
    Summarization (judge): 0.875
    Summary coverage (judge): 0.750
    Summary faithfulness (judge): 1.000
    """

    name = "Summarization (judge)"
    aliases = ("Summarization judge",)
    description = (
        "LLM judge: the answer as a summary, scored 1–5 for coverage of the reference summary "
        "(expected answer) and faithfulness to the source (retrieved context), normalised."
    )
    inputs = frozenset({Input.ANSWER})
    metrics = (
        MetricSpec(
            _SUMMARIZATION,
            "mean of the normalised coverage and faithfulness scores the case has",
            threshold=0.5,
            primary=True,
        ),
        MetricSpec(
            _COVERAGE, "(coverage − 1) / 4: key points of the reference kept", threshold=0.5
        ),
        MetricSpec(_FAITHFULNESS, "(faithfulness − 1) / 4: supported by the source", threshold=0.5),
    )

    def messages(self, sample: Sample, coverage: bool, faithfulness: bool) -> list[Message]:
        rubrics = [
            r
            for r, on in ((_COVERAGE_RUBRIC, coverage), (_FAITHFULNESS_RUBRIC, faithfulness))
            if on
        ]
        keys = []
        if coverage:
            keys.append('"coverage_reason": "<one sentence>", "coverage": <integer 1 to 5>')
        if faithfulness:
            keys.append('"faithfulness_reason": "<one sentence>", "faithfulness": <integer 1 to 5>')
        return build(
            "Evaluate the summary inside <answer>, written by an assistant for the request "
            "inside <question>. Score:\n- " + "\n- ".join(rubrics),
            case_blocks(sample, expected_answer=coverage, context=faithfulness),
            "Reply as {" + ", ".join(keys) + "}.",
        )

    def score(self, sample: Sample) -> Mapping[str, Scored]:
        coverage = sample.has(Input.EXPECTED_ANSWER)
        faithfulness = bool(nonblank_chunks(sample))
        if not coverage and not faithfulness:
            raise SkipCase(
                "needs a reference summary (the expected answer) or a source (the retrieved "
                "context)"
            )
        schema: type[BaseModel]
        if coverage and faithfulness:
            schema = SummaryCoverageAndFaithfulness
        else:
            schema = SummaryCoverage if coverage else SummaryFaithfulness
        reply = self.ask(self.messages(sample, coverage, faithfulness), schema, purpose=self.name)
        value = reply.value.model_dump()
        out: dict[str, Scored] = {}
        parts: list[str] = []
        norms: list[float] = []
        for key, metric, on, missing in (
            ("coverage", _COVERAGE, coverage, "no reference summary (fill the expected answer)"),
            ("faithfulness", _FAITHFULNESS, faithfulness, "no source (no retrieved context)"),
        ):
            if not on:
                out[metric] = Unscored.skipped(missing)
                continue
            s = int(value[key])
            norms.append(normalised(s, 5))
            parts.append(f"{key} {s}/5: {value[key + '_reason']}")
            out[metric] = Scored(norms[-1], f"{key} {s}/5 → {norms[-1]:.2f}; {parts[-1]}")
        mean = sum(norms) / len(norms)
        out[_SUMMARIZATION] = Scored(
            mean, f"mean of normalised scores {mean:.3f}; " + "; ".join(parts)
        )
        return out
