"""The 1–5 family (PromptFlow style): one generic evaluator, one registered subclass per
rubric of :data:`~evalrunner.evaluators.judge_quality.rubrics.RUBRICS`.

Each asks the judge for one integer from 1 to 5 per case with a few-shot prompt (the task,
what each score means, three worked examples, then the case) and reports ``<name>`` — the
raw 1–5 score (higher is better, threshold 3, not primary) — and ``<name> normalised`` —
(score − 1) / 4 (primary, threshold 0.5).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from pydantic import BaseModel, ConfigDict, Field

from evalrunner.evaluators.base import Input, MetricSpec, Sample, Scored, SkipCase
from evalrunner.evaluators.judge_base import JudgeEvaluator, case_blocks, nonblank_chunks
from evalrunner.evaluators.judge_quality.rubrics import RUBRICS, Example, Rubric
from evalrunner.evaluators.judge_quality.scale import normalised
from evalrunner.evaluators.registry import register
from evalrunner.judge.base import Message
from evalrunner.judge.prompts import build, tagged, tagged_list

__all__ = [
    "RUBRIC_EVALUATORS",
    "OneToFiveEvaluator",
    "one_to_five_metrics",
    "rubric_evaluator",
]


class OneToFiveScore(BaseModel):
    model_config = ConfigDict(extra="ignore")

    reason: str
    score: int = Field(ge=1, le=5)


def one_to_five_metrics(name: str, what: str) -> tuple[MetricSpec, ...]:
    """Raw 1–5 (threshold 3) and normalised (score − 1) / 4 (primary, threshold 0.5)."""
    return (
        MetricSpec(name, f"{what}, judge's integer 1–5", threshold=3, low=1, high=5),
        MetricSpec(f"{name} normalised", f"{what}, (score − 1) / 4", threshold=0.5, primary=True),
    )


def render_example(example: Example) -> str:
    """One few-shot example: the texts delimited like a real case's, then the reply."""
    texts: dict[str, str | tuple[str, ...] | None] = {
        "question": example.question,
        "expected_answer": example.expected_answer,
        "context": example.context,
        "answer": example.answer,
    }
    blocks = [
        tagged_list(tag, "chunk", list(t)) if isinstance(t, tuple) else tagged(tag, t)
        for tag, t in texts.items()
        if t is not None
    ]
    reply = f'{{"reason": "{example.reason}", "score": {example.score}}}'
    return "\n".join(blocks) + f"\nReply: {reply}"


def render_levels(levels: Mapping[int, str]) -> str:
    """What each score means, one line each from 5 down to 1: ``5: ...``."""
    return "\n".join(f"{score}: {levels[score]}" for score in sorted(levels, reverse=True))


class OneToFiveEvaluator(JudgeEvaluator):
    """One integer 1–5 per case from a few-shot prompt. Each subclass is made from one
    :class:`Rubric` by :func:`rubric_evaluator`: ``name``, ``inputs`` and ``metrics`` from
    it, and ``task`` (what is measured), ``rubric`` (what each score means), ``examples``
    (rendered) and ``shows`` (which case texts the judge sees)."""

    task: ClassVar[str]
    rubric: ClassVar[str]
    examples: ClassVar[tuple[str, ...]]
    #: Which case texts go into the prompt (those the case has).
    shows: ClassVar[frozenset[Input]]

    def messages(self, sample: Sample) -> list[Message]:
        examples = "\n\n".join(f"Example {i}:\n{e}" for i, e in enumerate(self.examples, 1))
        blocks = case_blocks(
            sample,
            question=Input.QUESTION in self.shows,
            expected_answer=Input.EXPECTED_ANSWER in self.shows,
            context=Input.CONTEXTS in self.shows,
            answer=Input.ANSWER in self.shows,
        )
        return build(
            f"{self.task}\n\nRate it with one integer from 1 to 5:\n{self.rubric}\n\n"
            f"Worked examples (for calibration only; they are not the case to rate):\n\n"
            f"{examples}\n\nThe case to rate:",
            blocks,
            'Reply as {"reason": "<one or two sentences>", "score": <integer from 1 to 5>}.',
        )

    def score(self, sample: Sample) -> Mapping[str, Scored]:
        if Input.CONTEXTS in self.inputs and not nonblank_chunks(sample):
            raise SkipCase("every retrieved chunk is blank")
        reply = self.ask(self.messages(sample), OneToFiveScore, purpose=self.name)
        s = reply.value.score
        reason = f"{s}/5: {reply.value.reason}"
        raw, norm = self.metrics[0].name, self.metrics[1].name
        return {
            raw: Scored(float(s), reason),
            norm: Scored(normalised(s, 5), f"({s} − 1) / 4 = {normalised(s, 5):.2f}; {reason}"),
        }


#: A short example per rubric evaluator, its docstring's (doctested): a
#: :class:`~evalrunner.judge.scripted.ScriptedJudge` gives the reply a model would write.
EXAMPLES: dict[str, str] = {
    "Groundedness": """\
>>> from evalrunner.judge.scripted import ScriptedJudge
>>> judge = ScriptedJudge({"Groundedness (1-5)": {
...     "reason": "the date is not in the context", "score": 4}})
>>> sample = Sample(question="Who wrote Hamlet?", answer="Shakespeare, in 1601.",
...                 contexts=["Hamlet is a tragedy by William Shakespeare."])
>>> for r in Groundedness(judge=judge).evaluate(sample):
...     print(f"{r.metric}: {r.score:.2f} {r.reason}")
Groundedness (1-5): 4.00 4/5: the date is not in the context
Groundedness (1-5) normalised: 0.75 (4 − 1) / 4 = 0.75; 4/5: the date is not in the context
""",
    "Relevance": """\
>>> from evalrunner.judge.scripted import ScriptedJudge
>>> judge = ScriptedJudge({"Relevance (1-5)": {
...     "reason": "answers who, adds an unasked date", "score": 4}})
>>> sample = Sample(question="Who wrote Hamlet?", answer="Shakespeare, in 1601.",
...                 contexts=["Hamlet is a tragedy by William Shakespeare."])
>>> for r in Relevance(judge=judge).evaluate(sample):
...     print(f"{r.metric}: {r.score:.2f} {r.reason}")
Relevance (1-5): 4.00 4/5: answers who, adds an unasked date
Relevance (1-5) normalised: 0.75 (4 − 1) / 4 = 0.75; 4/5: answers who, adds an unasked date
""",
    "Coherence": """\
>>> from evalrunner.judge.scripted import ScriptedJudge
>>> judge = ScriptedJudge({"Coherence (1-5)": {
...     "reason": "the middle sentence breaks the thread", "score": 2}})
>>> sample = Sample(question="Who wrote Hamlet?", answer="Shakespeare. Denmark is cold. He did.")
>>> for r in Coherence(judge=judge).evaluate(sample):
...     print(f"{r.metric}: {r.score:.2f} {r.reason}")
Coherence (1-5): 2.00 2/5: the middle sentence breaks the thread
Coherence (1-5) normalised: 0.25 (2 − 1) / 4 = 0.25; 2/5: the middle sentence breaks the thread
""",
    "Fluency": """\
>>> from evalrunner.judge.scripted import ScriptedJudge
>>> judge = ScriptedJudge({"Fluency (1-5)": {
...     "reason": "one grammatical error", "score": 3}})
>>> sample = Sample(question="Who wrote Hamlet?", answer="Hamlet by Shakespeare was wrote.")
>>> for r in Fluency(judge=judge).evaluate(sample):
...     print(f"{r.metric}: {r.score:.2f} {r.reason}")
Fluency (1-5): 3.00 3/5: one grammatical error
Fluency (1-5) normalised: 0.50 (3 − 1) / 4 = 0.50; 3/5: one grammatical error
""",
    "Similarity": """\
>>> from evalrunner.judge.scripted import ScriptedJudge
>>> judge = ScriptedJudge({"Similarity (1-5)": {
...     "reason": "same author, shorter", "score": 5}})
>>> sample = Sample(question="Who wrote Hamlet?", answer="Shakespeare.",
...                 expected_answer="William Shakespeare wrote Hamlet.")
>>> for r in Similarity(judge=judge).evaluate(sample):
...     print(f"{r.metric}: {r.score:.2f} {r.reason}")
Similarity (1-5): 5.00 5/5: same author, shorter
Similarity (1-5) normalised: 1.00 (5 − 1) / 4 = 1.00; 5/5: same author, shorter
""",
    "RetrievalScore": """\
>>> from evalrunner.judge.scripted import ScriptedJudge
>>> judge = ScriptedJudge({"Retrieval score (1-5)": {
...     "reason": "the second chunk answers it", "score": 4}})
>>> sample = Sample(question="Who wrote Hamlet?",
...                 contexts=["Hamlet is set in Denmark.", "Hamlet is by Shakespeare."])
>>> for r in RetrievalScore(judge=judge).evaluate(sample):
...     print(f"{r.metric}: {r.score:.2f} {r.reason}")
Retrieval score (1-5): 4.00 4/5: the second chunk answers it
Retrieval score (1-5) normalised: 0.75 (4 − 1) / 4 = 0.75; 4/5: the second chunk answers it
""",
}


def rubric_evaluator(rubric: Rubric) -> type[OneToFiveEvaluator]:
    """The evaluator class of one rubric (not registered: :data:`RUBRIC_EVALUATORS` is)."""
    namespace = {
        "__module__": __name__,
        "__qualname__": rubric.class_name,
        "__doc__": f"{rubric.description}\n\n{EXAMPLES.get(rubric.class_name, '')}".rstrip(),
        "name": rubric.name,
        "aliases": rubric.aliases,
        "description": rubric.description,
        "inputs": rubric.inputs,
        "shows": rubric.shows,
        "metrics": one_to_five_metrics(rubric.name, rubric.measures),
        "task": rubric.task,
        "rubric": render_levels(rubric.levels),
        "examples": tuple(render_example(e) for e in rubric.examples),
    }
    return type(rubric.class_name, (OneToFiveEvaluator,), namespace)


#: Every rubric's evaluator, registered in the order of :data:`RUBRICS`, by class name.
RUBRIC_EVALUATORS: dict[str, type[OneToFiveEvaluator]] = {
    rubric.class_name: register(rubric_evaluator(rubric)) for rubric in RUBRICS
}

# The rubric evaluators by their class names, held here (their module) so that doctest finds
# their examples and code can import them directly.
Groundedness = RUBRIC_EVALUATORS["Groundedness"]
Relevance = RUBRIC_EVALUATORS["Relevance"]
Coherence = RUBRIC_EVALUATORS["Coherence"]
Fluency = RUBRIC_EVALUATORS["Fluency"]
Similarity = RUBRIC_EVALUATORS["Similarity"]
RetrievalScore = RUBRIC_EVALUATORS["RetrievalScore"]
