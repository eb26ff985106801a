"""``GEval`` (alias ``G-Eval``): an LLM judge scores the answer on your criteria or
evaluation steps.

Options (``evaluator_options["GEval"]``): ``criteria`` and/or ``evaluation_steps``,
``scale`` (5 or 10), ``evaluation_params`` (the case fields the judge is shown: ``input``,
``actual_output``, ``expected_output``, ``retrieval_context``; default all four). Any number
of named GEval metrics, each its own column, threshold and gate:
:mod:`evalrunner.evaluators.judge_metrics` (``judge_metrics``). With criteria only, the
judge writes the evaluation steps once per run (kept on the evaluator, which serves every
case of its run, and per judge client and criteria; the judge's response cache makes the
same prompt free on later runs). Each case is scored on 1..scale. When the judge returns
log-probabilities for the score token, the score is the probability-weighted mean of the
score tokens, normalised over the valid score tokens only (P(4) = 0.6, P(5) = 0.4 → 4.4);
otherwise the integer. Metric ``GEval`` =
(s − 1) / (scale − 1), threshold 0.5.
"""

from __future__ import annotations

import math
import threading
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from evalrunner.evaluators.base import Input, MetricSpec, Sample, Scored
from evalrunner.evaluators.judge_base import JudgeEvaluator, case_blocks
from evalrunner.evaluators.judge_metrics import Declarable, judge_kind
from evalrunner.evaluators.judge_quality.scale import normalised
from evalrunner.evaluators.registry import register
from evalrunner.judge.base import Judge, Message
from evalrunner.judge.prompts import build

__all__ = ["EVALUATION_PARAMS", "GEval", "GEvalOptions", "evaluation_param", "weighted_score"]


#: The case fields a GEval judge may be shown (DeepEval's ``LLMTestCaseParams`` names), and
#: the case input each is.
EVALUATION_PARAMS: Mapping[str, Input] = {
    "input": Input.QUESTION,
    "actual_output": Input.ANSWER,
    "expected_output": Input.EXPECTED_ANSWER,
    "retrieval_context": Input.CONTEXTS,
}
#: This project's names for the same fields, accepted too.
_PARAM_ALIASES = {
    "question": "input",
    "answer": "actual_output",
    "expected_answer": "expected_output",
    "context": "retrieval_context",
    "contexts": "retrieval_context",
}


def evaluation_param(value: object) -> str:
    """The canonical name of one ``evaluation_params`` entry; ValueError naming the valid."""
    key = str(value).strip().casefold().replace(" ", "_").replace("-", "_")
    key = _PARAM_ALIASES.get(key, key)
    if key not in EVALUATION_PARAMS:
        raise ValueError(
            f"unknown evaluation_params entry {value!r}; valid: {', '.join(EVALUATION_PARAMS)} "
            f"(or {', '.join(_PARAM_ALIASES)})"
        )
    return key


class GEvalOptions(BaseModel):
    """Run-wide settings of GEval: ``criteria`` and/or ``evaluation_steps``, ``scale``,
    ``evaluation_params``."""

    model_config = ConfigDict(extra="forbid")

    #: What a good answer is, in plain words; the judge turns it into steps once per run.
    criteria: str | None = None
    #: The steps themselves (then criteria, if also given, is shown alongside them).
    evaluation_steps: list[str] | None = None
    #: The form's top score: 1–5 or 1–10.
    scale: Literal[5, 10] = 5
    #: The case fields the judge sees (None: every one the case has). A case lacking one
    #: of them is skipped with the reason.
    evaluation_params: list[str] | None = None

    @field_validator("evaluation_params")
    @classmethod
    def _params(cls, value: list[str] | None) -> list[str] | None:
        if value is None:
            return None
        params = list(dict.fromkeys(evaluation_param(v) for v in value))
        if not params:
            raise ValueError("evaluation_params is empty; leave it out to show every field")
        return params

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
    """Where the score token is: the LAST position after ``"score":`` (the text rebuilt
    from each position's most likely token, which is the chosen one at temperature 0) whose
    most likely token is a valid score, as the verdict is the reply's last JSON (a judge may
    quote a ``"score"`` the answer planted before its own); else the first such position."""
    chosen = [_argmax(p) if p else "" for p in top_logprobs]
    first = None
    after_key = None
    for i, token in enumerate(chosen):
        if token.strip().strip('"') not in valid:
            continue
        prefix = "".join(chosen[:i]).rstrip().rstrip('"').rstrip()
        if prefix.endswith(":") and prefix[:-1].rstrip().endswith('"score"'):
            after_key = i
        if first is None:
            first = i
    return after_key if after_key is not None else first


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


@judge_kind("geval")
@register
class GEval(Declarable, JudgeEvaluator[GEvalOptions]):
    """G-Eval (Liu et al., 2023): the judge scores your criteria on a 1-5 (or 1-10) scale, and
    where it returns log-probabilities the score is their expectation rather than the one
    token it printed, so a hesitant 4 counts less than a sure one.

    >>> import math
    >>> reply = [{"{": 0.0}, {'"score"': 0.0}, {":": 0.0},  # the reply's tokens, in order
    ...          {"4": math.log(0.6), "3": math.log(0.3), "5": math.log(0.1)}]
    >>> value, probabilities = weighted_score(reply, scale=5, chosen=4)
    >>> round(value, 2), {k: round(p, 2) for k, p in probabilities.items()}
    (3.8, {3: 0.3, 4: 0.6, 5: 0.1})

    With ``name=`` it is a metric of its own (:mod:`evalrunner.evaluators.judge_metrics`):
    ``GEval(name="Politeness", criteria="Is the answer polite?", evaluation_params=["input",
    "actual_output"], threshold=0.7)`` reports the metric ``Politeness``, with its own
    threshold and gate, and shows the judge only the question and the answer.
    """

    judge_kind = "geval"
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

    def __init__(
        self,
        thresholds: Mapping[str, float] | None = None,
        options: Mapping[str, Any] | None = None,
        *,
        judge: Judge | None = None,
        threshold: float | None = None,
        name: str | None = None,
        criteria: str | None = None,
        evaluation_steps: Sequence[str] | None = None,
        evaluation_params: Sequence[str] | None = None,
        scale: int | None = None,
    ) -> None:
        """``criteria``, ``evaluation_steps``, ``evaluation_params``, ``scale``: the options,
        the short form for Python; ``name``: a named metric of its own (see the class)."""
        given = {
            "criteria": criteria,
            "evaluation_steps": None if evaluation_steps is None else list(evaluation_steps),
            "evaluation_params": None if evaluation_params is None else list(evaluation_params),
            "scale": scale,
        }
        chosen = {**(options or {}), **{k: v for k, v in given.items() if v is not None}}
        if self.declaration is not None:  # a named copy: its declared settings
            chosen = {} if options is None else dict(options)
        super().__init__(
            thresholds, {**self.default_options, **chosen}, threshold=threshold, judge=judge
        )
        self.chosen_options = chosen
        self._steps_lock = threading.Lock()
        self._steps: list[str] | None = self.options.evaluation_steps
        self._steps_written = self._steps is None

    def missing_inputs(self, sample: Sample) -> list[Input]:
        params = self.options.evaluation_params
        if params is None:
            return super().missing_inputs(sample)
        return [EVALUATION_PARAMS[p] for p in params if not sample.has(EVALUATION_PARAMS[p])]

    def evaluation_steps(self) -> list[str]:
        """The given steps, or the ones the judge writes from the criteria: once per run.

        Written steps are kept on this evaluator (a run context builds it once for all its
        cases) and also per judge client and criteria, so any other evaluator built on the
        same judge finds them; concurrent cases wait for the first writer. A failed attempt
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
        params = self.options.evaluation_params
        shown = set(EVALUATION_PARAMS if params is None else params)
        what = "the answer inside <answer>" if "actual_output" in shown else "the case below"
        return build(
            f"Score {what} from 1 (worst) to {scale} (best) on the "
            f"criteria below, following the evaluation steps.\n\n{criteria}"
            f"Evaluation steps:\n{numbered}",
            case_blocks(
                sample,
                question="input" in shown,
                expected_answer="expected_output" in shown,
                context="retrieval_context" in shown,
                answer="actual_output" in shown,
            ),
            f'Reply as {{"score": <integer from 1 to {scale}>, "reason": "<one or two '
            'sentences>"}, the score first.',
        )

    def score(self, sample: Sample) -> Mapping[str, Scored]:
        scale = self.options.scale
        steps = self.evaluation_steps()
        schema: type[GEvalScore5 | GEvalScore10] = GEvalScore5 if scale == 5 else GEvalScore10
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
        norm = normalised(value, scale)
        return {
            self.primary_metric().name: Scored(
                norm,
                f"score {value:.2f} of 1–{scale} → {norm:.3f} ({how}; {origin}); judge: "
                f"{reply.value.reason}",
            )
        }
