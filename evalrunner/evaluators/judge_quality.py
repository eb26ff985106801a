"""Answer-quality scores by an LLM judge: GEval, BYOP, Summarization (judge) and the 1–5
family (PromptFlow style).

Every evaluator here needs a judge (without one its metrics are skipped with the reason),
makes one judge call per case (GEval: plus one per run to write its evaluation steps), and
shows the case's texts to the judge delimited, with the instruction to ignore instructions
inside them (:mod:`evalrunner.judge.prompts`). A reply that does not
validate (a score of 7 on a 1–5 form, no JSON) is repaired once by the judge client, then
reported as a parsing failure of the case's metrics: never NaN, never a silent 0.

``GEval`` (alias ``G-Eval``) — options (``evaluator_options["GEval"]``): ``criteria`` and/or
``evaluation_steps``, ``scale`` (5 or 10). With criteria only, the judge writes the
evaluation steps once per run (kept per judge client and criteria, since the pipeline
builds evaluators per case; the judge's response cache makes the same prompt free on later
runs). Each case is scored on 1..scale. When the judge returns log-probabilities for the
score token, the score is the probability-weighted mean of the score tokens, normalised
over the valid score tokens only (P(4) = 0.6, P(5) = 0.4 → 4.4); otherwise the integer.
Metric ``GEval`` = (s − 1) / (scale − 1), threshold 0.5.

``BYOP`` (bring your own prompt) — option ``prompt``: a template over ``{question}``,
``{expected_answer}``, ``{context}`` and ``{answer}`` (``{{``/``}}`` for literal braces);
other placeholders are refused when the options are validated. The judge answers it true
or false with a reason. Metric ``BYOP``: 1 for true, pass rate, threshold 0.5. A case that
lacks a text the template uses is skipped.

``Summarization (judge)`` — the answer is a summary; the reference summary is the expected
answer and the source is the retrieved context. One call scores coverage (of the
reference's key points) and faithfulness (to the source) from 1 to 5; each is reported
normalised, (s − 1) / 4: ``Summary coverage (judge)``, ``Summary faithfulness (judge)``, and
their mean ``Summarization (judge)`` (primary). A case with only one of reference and source
gets the metric it can have; the other is skipped. Thresholds 0.5.

The 1–5 family, few-shot prompts, one integer per case each: ``Groundedness (1-5)`` (the
answer follows from the retrieved context), ``Relevance (1-5)`` (the answer addresses the
question), ``Coherence (1-5)``, ``Fluency (1-5)``, ``Similarity (1-5)`` (answer vs expected
answer) and ``Retrieval score (1-5)`` (retrieved context vs question). Each reports
``<Name>`` — the raw 1–5 score (higher is better, threshold 3, not primary) — and
``<Name> normalised`` — (score − 1) / 4 (primary, threshold 0.5).
"""

from __future__ import annotations

import math
import string
import threading
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from evalrunner.evaluators.base import Input, MetricSpec, Sample, Scored, SkipCase
from evalrunner.evaluators.judge_safety import (
    JudgeEvaluator,
    Unscored,
    case_blocks,
    nonblank_chunks,
)
from evalrunner.evaluators.registry import register
from evalrunner.judge.base import Judge, Message
from evalrunner.judge.prompts import build, tagged, tagged_list

__all__ = [
    "BYOP",
    "BYOP_PLACEHOLDERS",
    "BYOPOptions",
    "Coherence",
    "Fluency",
    "GEval",
    "GEvalOptions",
    "Groundedness",
    "OneToFiveEvaluator",
    "Relevance",
    "RetrievalScore",
    "Similarity",
    "SummarizationJudge",
    "one_to_five_metrics",
    "weighted_score",
]


def _normalised(score: float, scale: int) -> float:
    return (score - 1) / (scale - 1)


# ------------------------------------------------------------------------------ GEval


class GEvalOptions(BaseModel):
    """Run-wide settings of GEval: ``criteria`` and/or ``evaluation_steps``, ``scale``."""

    model_config = ConfigDict(extra="forbid")

    #: What a good answer is, in plain words; the judge turns it into steps once per run.
    criteria: str | None = None
    #: The steps themselves (then criteria, if also given, is shown alongside them).
    evaluation_steps: list[str] | None = None
    #: The form's top score: 1–5 or 1–10.
    scale: Literal[5, 10] = 5

    @field_validator("criteria")
    @classmethod
    def _criteria_text(cls, value: str | None) -> str | None:
        if value is not None and not value.strip():
            raise ValueError("criteria is empty")
        return value.strip() if value is not None else None

    @field_validator("evaluation_steps")
    @classmethod
    def _steps_text(cls, value: list[str] | None) -> list[str] | None:
        if value is None:
            return None
        steps = [s.strip() for s in value]
        if not steps or not all(steps):
            raise ValueError("evaluation_steps must be a non-empty list of non-empty steps")
        return steps

    @model_validator(mode="after")
    def _criteria_or_steps(self) -> Self:
        if self.criteria is None and self.evaluation_steps is None:
            raise ValueError(
                "GEval needs 'criteria' (what a good answer is; the judge writes the "
                "evaluation steps) or 'evaluation_steps' (or both)"
            )
        return self


class GEvalSteps(BaseModel):
    model_config = ConfigDict(extra="ignore")

    steps: list[str] = Field(min_length=1, max_length=12)

    @field_validator("steps")
    @classmethod
    def _non_empty(cls, value: list[str]) -> list[str]:
        steps = [s.strip() for s in value if s.strip()]
        if not steps:
            raise ValueError("no evaluation step")
        return steps


class GEvalScore5(BaseModel):
    model_config = ConfigDict(extra="ignore")

    score: int = Field(ge=1, le=5)
    reason: str


class GEvalScore10(BaseModel):
    model_config = ConfigDict(extra="ignore")

    score: int = Field(ge=1, le=10)
    reason: str


def _argmax(position: Mapping[str, float]) -> str:
    return max(position.items(), key=lambda kv: kv[1])[0]


def _score_position(top_logprobs: Sequence[Mapping[str, float]], valid: set[str]) -> int | None:
    """Where the score token is: the first position after ``"score":`` (the text rebuilt
    from each position's most likely token, which is the chosen one at temperature 0) whose
    most likely token is a valid score; else the first such position anywhere."""
    chosen = [_argmax(p) if p else "" for p in top_logprobs]
    first = None
    for i, token in enumerate(chosen):
        if token.strip().strip('"') not in valid:
            continue
        prefix = "".join(chosen[:i]).rstrip().rstrip('"').rstrip()
        if prefix.endswith(":") and prefix[:-1].rstrip().endswith('"score"'):
            return i
        if first is None:
            first = i
    return first


def weighted_score(
    top_logprobs: Sequence[Mapping[str, float]] | None, scale: int, chosen: int
) -> tuple[float, dict[int, float]] | None:
    """The probability-weighted score and the normalised probabilities of the score tokens
    (1..scale; tokens that differ only by spaces or quotes are summed), or None when the
    log-probabilities do not show the score token or disagree with the parsed score."""
    if not top_logprobs:
        return None
    valid = {str(i) for i in range(1, scale + 1)}
    position = _score_position(top_logprobs, valid)
    if position is None:
        return None
    probs: dict[int, float] = {}
    for token, logprob in top_logprobs[position].items():
        key = token.strip().strip('"')
        if key in valid and math.isfinite(logprob):
            probs[int(key)] = probs.get(int(key), 0.0) + math.exp(logprob)
    total = sum(probs.values())
    if total <= 0 or max(probs, key=lambda k: probs[k]) != chosen:
        return None
    probs = {k: p / total for k, p in sorted(probs.items())}
    return sum(k * p for k, p in probs.items()), probs


@dataclass
class _StepsSlot:
    lock: threading.Lock = field(default_factory=threading.Lock)
    steps: list[str] | None = None


_SLOTS_LOCK = threading.Lock()
#: Judge-written GEval steps per judge client (one per run and process) and criteria.
_WRITTEN_STEPS: weakref.WeakKeyDictionary[Judge, dict[str, _StepsSlot]] = (
    weakref.WeakKeyDictionary()
)


def _steps_slot(judge: Judge, criteria: str) -> _StepsSlot:
    with _SLOTS_LOCK:
        return _WRITTEN_STEPS.setdefault(judge, {}).setdefault(criteria, _StepsSlot())


@register
class GEval(JudgeEvaluator):
    name = "GEval"
    aliases = ("G-Eval",)
    description = (
        "LLM judge on your criteria or evaluation steps, scored 1–5 (or 1–10); "
        "probability-weighted when the judge returns log-probabilities; normalised to [0, 1]."
    )
    inputs = frozenset({Input.ANSWER})
    metrics = (
        MetricSpec(
            "GEval",
            "(score − 1) / (scale − 1) of the judge's score on the criteria",
            threshold=0.5,
            primary=True,
        ),
    )
    options_model: ClassVar[type[BaseModel]] = GEvalOptions
    options: GEvalOptions

    def __init__(
        self,
        thresholds: Mapping[str, float] | None = None,
        options: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(thresholds, options)
        self._steps_lock = threading.Lock()
        self._steps: list[str] | None = self.options.evaluation_steps
        self._steps_written = self._steps is None

    def evaluation_steps(self) -> list[str]:
        """The given steps, or the ones the judge writes from the criteria: once per run.

        Written steps are kept on this evaluator and, since the pipeline builds evaluators
        per case, also per judge (the run's judge client is shared by all cases of a
        process) and criteria; concurrent cases wait for the first writer. A failed attempt
        is not kept: the next case tries again. The judge's response cache makes the same
        prompt free on later runs and in other processes."""
        steps = self._steps
        if steps is not None:
            return steps
        with self._steps_lock:
            if self._steps is None:
                assert self.options.criteria is not None and self.judge is not None
                slot = _steps_slot(self.judge, self.options.criteria)
                with slot.lock:
                    if slot.steps is None:
                        slot.steps = self._write_steps(self.options.criteria)
                    self._steps = slot.steps
            return self._steps

    def _write_steps(self, criteria: str) -> list[str]:
        reply = self.ask(
            build(
                "Write the evaluation form for a question-answering assistant: 3 to 6 "
                "concise, concrete steps an evaluator follows to judge how well an answer "
                "meets the criteria below. The evaluator will see the question, the answer "
                "and, when available, the expected answer and the retrieved context."
                f"\n\nCriteria:\n{criteria}",
                [],
                'Reply as {"steps": ["<step>", ...]}.',
            ),
            GEvalSteps,
            purpose="GEval evaluation steps",
        )
        return reply.value.steps

    def messages(self, sample: Sample, steps: Sequence[str]) -> list[Message]:
        scale = self.options.scale
        numbered = "\n".join(f"{i}. {s}" for i, s in enumerate(steps, 1))
        criteria = f"Criteria:\n{self.options.criteria}\n\n" if self.options.criteria else ""
        return build(
            f"Score the answer inside <answer> from 1 (worst) to {scale} (best) on the "
            f"criteria below, following the evaluation steps.\n\n{criteria}"
            f"Evaluation steps:\n{numbered}",
            case_blocks(sample),
            f'Reply as {{"score": <integer from 1 to {scale}>, "reason": "<one or two '
            'sentences>"}, the score first.',
        )

    def score(self, sample: Sample) -> Mapping[str, Scored]:
        scale = self.options.scale
        steps = self.evaluation_steps()
        schema = GEvalScore5 if scale == 5 else GEvalScore10
        reply = self.ask(self.messages(sample, steps), schema, purpose="GEval", logprobs=True)
        chosen = reply.value.score
        weighted = weighted_score(reply.top_logprobs, scale, chosen)
        if weighted is None:
            value = float(chosen)
            how = (
                "integer score: the judge returned no log-probabilities for the score token"
                if not reply.top_logprobs
                else "integer score: the log-probabilities did not show the score token"
            )
        else:
            value, probs = weighted
            shown = ", ".join(f"P({k})={p:.2f}" for k, p in probs.items() if p >= 0.005)
            how = f"probability-weighted over the score tokens: {shown}"
        origin = "judge-written steps" if self._steps_written else "given steps"
        norm = _normalised(value, scale)
        return {
            "GEval": Scored(
                norm,
                f"score {value:.2f} of 1–{scale} → {norm:.3f} ({how}; {origin}); judge: "
                f"{reply.value.reason}",
            )
        }


# ------------------------------------------------------------------------------- BYOP

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


@register
class BYOP(JudgeEvaluator):
    name = "BYOP"
    aliases = ("Bring your own prompt",)
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
    options_model: ClassVar[type[BaseModel]] = BYOPOptions
    options: BYOPOptions

    def __init__(
        self,
        thresholds: Mapping[str, float] | None = None,
        options: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(thresholds, options)
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
            "BYOP": Scored(
                float(verdict),
                f"judge answered {'true' if verdict else 'false'}: {reply.value.reason}",
            )
        }


# ----------------------------------------------------------------- Summarization (judge)

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
            norms.append(_normalised(s, 5))
            parts.append(f"{key} {s}/5: {value[key + '_reason']}")
            out[metric] = Scored(norms[-1], f"{key} {s}/5 → {norms[-1]:.2f}; {parts[-1]}")
        mean = sum(norms) / len(norms)
        out[_SUMMARIZATION] = Scored(
            mean, f"mean of normalised scores {mean:.3f}; " + "; ".join(parts)
        )
        return out


# ---------------------------------------------------------------------- the 1–5 family


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


def _example(score: int, reason: str, **texts: str | list[str]) -> str:
    """One few-shot example: the texts delimited like a real case's, then the reply."""
    blocks = [
        tagged_list(tag, "chunk", t) if isinstance(t, list) else tagged(tag, t)
        for tag, t in texts.items()
    ]
    reply = f'{{"reason": "{reason}", "score": {score}}}'
    return "\n".join(blocks) + f"\nReply: {reply}"


class OneToFiveEvaluator(JudgeEvaluator):
    """One integer 1–5 per case from a few-shot prompt. A subclass sets ``name``,
    ``inputs``, ``task`` (what is measured), ``rubric`` (what each score means),
    ``examples`` (made with :func:`_example`), ``shows`` (which case texts the judge sees)
    and ``metrics = one_to_five_metrics(name, ...)``."""

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
        raw, normalised = self.metrics[0].name, self.metrics[1].name
        return {
            raw: Scored(float(s), reason),
            normalised: Scored(
                _normalised(s, 5), f"({s} − 1) / 4 = {_normalised(s, 5):.2f}; {reason}"
            ),
        }


@register
class Groundedness(OneToFiveEvaluator):
    name = "Groundedness (1-5)"
    description = "LLM judge, 1–5: does the answer follow from the retrieved context?"
    inputs = frozenset({Input.ANSWER, Input.CONTEXTS})
    shows = frozenset({Input.QUESTION, Input.CONTEXTS, Input.ANSWER})
    metrics = one_to_five_metrics(name, "the answer follows from the retrieved context")
    task = (
        "Decide how well the answer inside <answer> is entailed by the retrieved context "
        "inside <context>: only the context counts, not what you know."
    )
    rubric = (
        "5: every claim of the answer follows from the context.\n"
        "4: the answer follows from the context except a minor detail.\n"
        "3: some claims follow from the context and some cannot be checked against it.\n"
        "2: most claims cannot be found in the context.\n"
        "1: the answer contradicts the context, or nothing in it comes from the context."
    )
    examples = (
        _example(
            5,
            "The context states the warranty is two years, as the answer says.",
            question="How long is the warranty?",
            context=["All devices come with a two-year warranty."],
            answer="The warranty lasts two years.",
        ),
        _example(
            1,
            "The context says Paris; the answer says Lyon.",
            question="Where is the head office?",
            context=["Our head office is in Paris."],
            answer="The head office is in Lyon.",
        ),
        _example(
            3,
            "The opening hours come from the context; the parking claim does not.",
            question="When is the store open?",
            context=["The store is open 9am to 6pm on weekdays."],
            answer="It is open 9am to 6pm on weekdays, and parking is free.",
        ),
    )


@register
class Relevance(OneToFiveEvaluator):
    name = "Relevance (1-5)"
    description = "LLM judge, 1–5: does the answer address the question?"
    inputs = frozenset({Input.QUESTION, Input.ANSWER})
    shows = frozenset({Input.QUESTION, Input.ANSWER})
    metrics = one_to_five_metrics(name, "the answer addresses the question")
    task = (
        "Decide how well the answer inside <answer> addresses the main aspects of the "
        "question inside <question> (correctness is not rated here)."
    )
    rubric = (
        "5: addresses every aspect of the question, nothing off-topic.\n"
        "4: addresses the question with a minor gap or a little off-topic content.\n"
        "3: addresses part of the question.\n"
        "2: barely touches the question.\n"
        "1: does not address the question at all."
    )
    examples = (
        _example(
            5,
            "It answers both what the fee is and when it is charged.",
            question="What is the late fee and when is it charged?",
            answer="The late fee is $15, charged five days after the due date.",
        ),
        _example(
            1,
            "The question asks about refunds; the answer describes shipping.",
            question="How do I get a refund?",
            answer="We ship to over 40 countries within five business days.",
        ),
        _example(
            3,
            "It gives the price but not the delivery time the question also asks for.",
            question="How much does express delivery cost and how fast is it?",
            answer="Express delivery costs $12.",
        ),
    )


@register
class Coherence(OneToFiveEvaluator):
    name = "Coherence (1-5)"
    description = "LLM judge, 1–5: do the answer's sentences fit together as a whole?"
    inputs = frozenset({Input.QUESTION, Input.ANSWER})
    shows = frozenset({Input.QUESTION, Input.ANSWER})
    metrics = one_to_five_metrics(name, "the answer reads as a coherent whole")
    task = (
        "Decide how coherent the answer inside <answer> is: whether its sentences fit "
        "together, follow a logical order and read naturally as a whole."
    )
    rubric = (
        "5: perfectly coherent, well organised.\n"
        "4: mostly coherent, a small jump or awkward transition.\n"
        "3: partly coherent; some sentences do not connect.\n"
        "2: mostly incoherent.\n"
        "1: no coherence at all: unrelated or contradictory sentences."
    )
    examples = (
        _example(
            5,
            "The steps are in order and each follows from the previous one.",
            question="How do I reset my password?",
            answer="Open Settings, choose Security, then click Reset password. You will "
            "receive an e-mail with a link to set the new one.",
        ),
        _example(
            1,
            "The sentences are unrelated to one another.",
            question="How do I reset my password?",
            answer="Bananas are yellow. Reset is a button. The sky was blue on Tuesday.",
        ),
        _example(
            3,
            "It starts with the steps but jumps to an unrelated topic midway.",
            question="How do I reset my password?",
            answer="Open Settings and choose Security. Our company was founded in 1998. "
            "Then click Reset password.",
        ),
    )


@register
class Fluency(OneToFiveEvaluator):
    name = "Fluency (1-5)"
    description = "LLM judge, 1–5: grammar, word choice and readability of the answer."
    inputs = frozenset({Input.ANSWER})
    shows = frozenset({Input.QUESTION, Input.ANSWER})
    metrics = one_to_five_metrics(name, "the answer is fluent")
    task = (
        "Decide how fluent the answer inside <answer> is: grammar, spelling, word choice "
        "and sentence structure (not its content)."
    )
    rubric = (
        "5: flawless, natural language.\n"
        "4: fluent with a minor slip.\n"
        "3: understandable with several errors or awkward phrasing.\n"
        "2: hard to read: many errors.\n"
        "1: barely readable."
    )
    examples = (
        _example(
            5,
            "Grammatical and natural.",
            question="What is the capital of Japan?",
            answer="The capital of Japan is Tokyo.",
        ),
        _example(
            1,
            "Broken grammar and word salad.",
            question="What is the capital of Japan?",
            answer="capital japan is the is tokyo the capital of city japan it",
        ),
        _example(
            3,
            "Understandable, with several grammar errors.",
            question="What is the capital of Japan?",
            answer="Capital of Japan are Tokyo, it have many peoples.",
        ),
    )


@register
class Similarity(OneToFiveEvaluator):
    name = "Similarity (1-5)"
    description = "LLM judge, 1–5: does the answer say what the expected answer says?"
    inputs = frozenset({Input.ANSWER, Input.EXPECTED_ANSWER})
    shows = frozenset({Input.QUESTION, Input.EXPECTED_ANSWER, Input.ANSWER})
    metrics = one_to_five_metrics(name, "the answer matches the expected answer")
    task = (
        "Decide how similar in meaning the answer inside <answer> is to the expected answer "
        "inside <expected_answer>, given the question (wording does not matter)."
    )
    rubric = (
        "5: same meaning, nothing missing or contradicting.\n"
        "4: same meaning, a minor detail missing or added.\n"
        "3: partly the same: some key information missing or different.\n"
        "2: mostly different.\n"
        "1: completely different or contradicting."
    )
    examples = (
        _example(
            5,
            "Same fact in other words.",
            question="When was the company founded?",
            expected_answer="It was founded in 1998.",
            answer="The company dates back to 1998.",
        ),
        _example(
            1,
            "The year contradicts the expected answer.",
            question="When was the company founded?",
            expected_answer="It was founded in 1998.",
            answer="It was founded in 2005.",
        ),
        _example(
            3,
            "It has the year but misses the founder the expected answer names.",
            question="When and by whom was the company founded?",
            expected_answer="Maria Lopez founded it in 1998.",
            answer="It was founded in 1998.",
        ),
    )


@register
class RetrievalScore(OneToFiveEvaluator):
    name = "Retrieval score (1-5)"
    description = "LLM judge, 1–5: is the retrieved context relevant to the question?"
    inputs = frozenset({Input.QUESTION, Input.CONTEXTS})
    shows = frozenset({Input.QUESTION, Input.CONTEXTS})
    metrics = one_to_five_metrics(name, "the retrieved context is relevant to the question")
    task = (
        "Decide how relevant the retrieved chunks inside <context> are to the question "
        "inside <question>: whether they hold what is needed to answer it, with the most "
        "relevant chunks first."
    )
    rubric = (
        "5: the chunks hold everything needed, the most relevant first, little noise.\n"
        "4: the chunks hold what is needed, with some irrelevant ones or poor order.\n"
        "3: the chunks hold part of what is needed.\n"
        "2: the chunks are mostly irrelevant; a hint at best.\n"
        "1: nothing in the chunks helps answer the question."
    )
    examples = (
        _example(
            5,
            "The first chunk answers the question directly.",
            question="What is the return window?",
            context=["Items can be returned within 30 days.", "Returns are free."],
        ),
        _example(
            1,
            "No chunk mentions returns.",
            question="What is the return window?",
            context=["Our stores open at 9am.", "We were founded in 1998."],
        ),
        _example(
            3,
            "One chunk is relevant but comes after two irrelevant ones and lacks the period.",
            question="What is the return window?",
            context=["We were founded in 1998.", "Our stores open at 9am.", "Returns are free."],
        ),
    )
