"""The evaluator contract: what an evaluator declares and what it returns per case.

An evaluator is a small class that declares its inputs, what it needs to run, and its metrics
(range, direction, default threshold, which one is primary). The base class owns everything
that must behave the same for all of them: skipping when inputs are missing (never scoring 0),
applying thresholds and direction, and turning an exception into an ``error`` result for that
case instead of losing the case.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from functools import cached_property
from typing import (
    TYPE_CHECKING,
    Any,
    ClassVar,
    Generic,
    Literal,
    Protocol,
    Self,
    cast,
    get_args,
    get_origin,
)

from pydantic import BaseModel, ConfigDict, Field
from typing_extensions import TypeVar, get_original_bases

from evalrunner.judge.base import Judge, JudgeError, JudgeParseError
from evalrunner.models.locate import ModelUnavailable
from evalrunner.suite.model import Turn
from evalrunner.targets.steps import AgentStep, ExpectedStep

if TYPE_CHECKING:
    from evalrunner.models import ModelHub

NO_JUDGE = (
    'no LLM judge configured; pass --judge \'{"openai": {"base_url": ..., "model": ...}}\' '
    "or set the event's judge object"
)


class Input(StrEnum):
    """Case fields an evaluator can ask for; a missing one skips the evaluator for that case."""

    QUESTION = "question"
    EXPECTED_ANSWER = "expected_answer"
    EXPECTED_CONTEXTS = "expected_contexts"
    ANSWER = "answer"
    CONTEXTS = "contexts"
    CONDITION = "condition"
    EXPECTED_TOOLS = "expected_tools"
    EXPECTED_STEPS = "expected_steps"
    STEPS = "steps"
    TURNS = "turns"


#: How to tell the user to provide each input when it is missing.
_INPUT_HINTS: dict[Input, str] = {
    Input.QUESTION: "the case has no question",
    Input.EXPECTED_ANSWER: "the case has no expected answer (fill the expected_answer column)",
    Input.EXPECTED_CONTEXTS: "the case has no expected contexts (fill expected_contexts)",
    Input.ANSWER: "there is no answer to score",
    Input.CONTEXTS: "the target returned no retrieved context",
    Input.CONDITION: "the case has no condition (fill the condition column)",
    Input.EXPECTED_TOOLS: "the case has no expected tools (fill the expected_tools column)",
    Input.EXPECTED_STEPS: "the case has no expected steps (fill the expected_steps column)",
    Input.STEPS: "the target reported no agent steps (a trace, tool_calls or steps_path)",
    Input.TURNS: "the case is not a conversation (group rows by conversation_id, or a turns cell)",
}


class SkipCase(Exception):
    """Raised by ``score`` when a case is out of the evaluator's scope (say, a refusal check
    on a case not categorised as unsafe): the case is skipped with this reason, never 0."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class Requirement(StrEnum):
    """What an evaluator needs; decides where in the pipeline it runs."""

    NOTHING = "nothing"  # pure CPU: runs per case in the fan-out
    LOCAL_MODEL = "local_model"  # small model, in-process
    GPU_BATCH = "gpu_batch"  # batched over the whole run in the Score step
    JUDGE = "judge"  # LLM judge, per case in the fan-out


@dataclass(frozen=True)
class MetricSpec:
    """One number an evaluator produces."""

    name: str
    description: str
    higher_is_better: bool = True
    threshold: float = 0.75
    low: float = 0.0
    high: float = 1.0
    primary: bool = False
    kind: Literal["continuous", "pass_fail"] = "continuous"

    def passes(self, score: float, threshold: float) -> bool:
        return score >= threshold if self.higher_is_better else score <= threshold


class Sample(BaseModel):
    """What evaluators see of one case × iteration: the expectations plus the target's answer."""

    model_config = ConfigDict(extra="forbid")

    question: str
    case_id: str | None = None
    expected_answer: str | None = None
    expected_contexts: list[str] = Field(default_factory=list)
    expected_intent: str | None = None
    expected_tool: str | None = None
    expected_documents: list[str] = Field(default_factory=list)
    expected_tools: list[str] = Field(default_factory=list)
    expected_steps: list[ExpectedStep] = Field(default_factory=list)
    expected_data: str | None = None
    condition: str | list[Any] | None = None
    categories: list[str] = Field(default_factory=list)
    answer: str | None = None
    contexts: list[str] = Field(default_factory=list)
    documents: list[str] = Field(default_factory=list)
    tool: str | None = None
    intent: str | None = None
    #: What an agent did, in order (the target's trace, tool_calls or steps_path).
    steps: list[AgentStep] = Field(default_factory=list)
    #: Data a tool or query retrieved (an evaluation sheet's ``retrieved_data_by_system``).
    data: str | None = None
    #: The suite's extra columns (e.g. a per-case ``json_schema``).
    metadata: dict[str, Any] = Field(default_factory=dict)
    #: The false fact the misinformation perturbation planted in this case's contexts.
    false_fact: str | None = None
    #: A whole conversation as it happened (conversation evaluators only): the user's turns
    #: and the target's actual answers, in order, ending with the last answer.
    turns: list[Turn] = Field(default_factory=list)

    def has(self, field: Input) -> bool:
        value = getattr(self, field.value)
        if field is Input.ANSWER:
            # An empty answer is still an answer (a wrong one); only a missing one is skipped.
            return value is not None
        if isinstance(value, str):
            return bool(value.strip())
        return bool(value)


Status = Literal["scored", "skipped", "error"]


class MetricResult(BaseModel):
    """Score, success and reason of one metric on one case; ``status`` says which apply."""

    model_config = ConfigDict(extra="forbid")

    evaluator: str
    metric: str
    status: Status
    score: float | None = None
    success: bool | None = None
    threshold: float | None = None
    reason: str
    #: What a later step needs to recompute this score (the judge-derived components of a
    #: score whose similarity part the Score step computes with embeddings); None for most.
    parts: dict[str, Any] | None = None


@dataclass(frozen=True)
class Scored:
    """An evaluator's raw answer for one metric, before thresholds are applied."""

    value: float
    reason: str
    #: Components kept on the result for a later step (see ``MetricResult.parts``).
    parts: dict[str, Any] | None = field(default=None, kw_only=True)


@dataclass(frozen=True)
class Unscored(Scored):
    """A metric of this case with no score while the case's other metrics have one (any
    evaluator may return it among its scores; :meth:`Evaluator.apply_thresholds` reports it):
    ``status`` "skipped" (an input only it needs is missing) or "error" (its own judge call
    failed). ``reason`` is the whole reason, prefix included ("skipped: ...")."""

    status: Status = "skipped"

    @classmethod
    def skipped(cls, reason: str) -> Unscored:
        return cls(math.nan, f"skipped: {reason}", "skipped")

    @classmethod
    def failed(cls, exc: JudgeError) -> Unscored:
        if isinstance(exc, JudgeParseError):
            return cls(math.nan, f"parsing failure: {exc.message}", "error")
        return cls(math.nan, f"error: judge: {exc.message}", "error")


class RunServices(Protocol):
    """What a run lends the evaluators it builds (the pipeline's
    :class:`~evalrunner.pipeline.context.RunContext` is one). Properties, so a service is only
    made when an evaluator asks for it: a run without judge metrics never builds a judge."""

    @property
    def judge(self) -> Judge | None: ...

    @property
    def models(self) -> ModelHub: ...


class NoOptions(BaseModel):
    """Evaluators without settings accept none."""

    model_config = ConfigDict(extra="forbid")


#: An evaluator's options model. Covariant, so every evaluator is an ``Evaluator`` (of
#: ``BaseModel``) wherever a run holds evaluators of several kinds; the default keeps a bare
#: ``Evaluator`` meaning "any evaluator".
OptionsT = TypeVar("OptionsT", bound=BaseModel, default=BaseModel, covariant=True)


class Evaluator(ABC, Generic[OptionsT]):
    """Base class of every evaluator; subclasses are registered by name with ``@register``.

    An evaluator with settings names its options model once, as the type argument
    (``class LabelMatch(Evaluator[ClassificationOptions])``): ``options_model`` (what Prepare
    validates the event's ``evaluator_options`` with) is taken from it, and ``self.options``
    is typed as that model, so no evaluator reads its settings untyped.
    """

    name: ClassVar[str]
    description: ClassVar[str]
    aliases: ClassVar[tuple[str, ...]] = ()
    inputs: ClassVar[frozenset[Input]]
    requires: ClassVar[Requirement] = Requirement.NOTHING
    #: False for evaluators that run only when named (their inputs are common, their
    #: meaning is not: a free-text expected answer is not a class label).
    in_defaults: ClassVar[bool] = True
    metrics: ClassVar[tuple[MetricSpec, ...]]
    #: Run-wide settings from the event's ``evaluator_options``, validated at Prepare. Set
    #: from the class's type argument (see :meth:`__init_subclass__`), not by hand.
    options_model: ClassVar[type[BaseModel]] = NoOptions
    #: True for evaluators that score a whole conversation (``Sample.turns``) once, on the
    #: conversation's own record; the others score each turn like a single-turn case.
    conversational: ClassVar[bool] = False

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """Take ``options_model`` from the options model the class is parametrised with, so
        the model that validates the event and the type of ``self.options`` are one
        declaration and cannot drift apart."""
        super().__init_subclass__(**kwargs)
        for base in get_original_bases(cls):
            origin = get_origin(base)
            if not (isinstance(origin, type) and issubclass(origin, Evaluator)):
                continue
            for arg in get_args(base):
                if isinstance(arg, type) and issubclass(arg, BaseModel):
                    if "options_model" in cls.__dict__:
                        raise TypeError(
                            f"{cls.__name__}: name the options model once, as the type "
                            f"argument ({arg.__name__}), not also as options_model"
                        )
                    cls.options_model = arg

    def __init__(
        self,
        thresholds: Mapping[str, float] | None = None,
        options: Mapping[str, Any] | None = None,
        *,
        threshold: float | None = None,
    ) -> None:
        """``thresholds`` by metric name (or this evaluator's name: its primary metric);
        ``threshold``: the primary metric's, the short form for Python
        (``evaluate(metrics=[Faithfulness(threshold=0.8)])``); ``options``: the settings of
        the event's ``evaluator_options``, validated by the options model."""
        # The model validated here is the class's type argument (see __init_subclass__).
        self._options = cast(OptionsT, self.options_model.model_validate(dict(options or {})))
        #: The options as given, so ``evaluate()`` can carry an object's into the run's event.
        self.chosen_options: dict[str, Any] = dict(options or {})
        self._thresholds = {m.name: m.threshold for m in self.metrics}
        for key, value in (thresholds or {}).items():
            if key in self._thresholds:
                self._thresholds[key] = float(value)
            elif key == self.name:
                self._thresholds[self.primary_metric().name] = float(value)
        if threshold is not None:
            self._thresholds[self.primary_metric().name] = float(threshold)

    def chosen_thresholds(self) -> dict[str, float]:
        """The thresholds this object has that differ from its metrics' defaults."""
        return {
            m.name: self._thresholds[m.name]
            for m in self.metrics
            if self._thresholds[m.name] != m.threshold
        }

    @classmethod
    def for_run(
        cls,
        thresholds: Mapping[str, float] | None,
        options: Mapping[str, Any] | None,
        services: RunServices,
    ) -> Self:
        """Build the evaluator for a run, taking from ``services`` what it needs (a judge,
        the model hub) at construction: nothing is bound after the fact. Evaluators that need
        nothing ignore ``services``."""
        return cls(thresholds, options)

    #: Inputs that come from the suite itself (not from the target's answer).
    _CASE_INPUTS: ClassVar[frozenset[Input]] = frozenset(
        {
            Input.QUESTION,
            Input.EXPECTED_ANSWER,
            Input.EXPECTED_CONTEXTS,
            Input.CONDITION,
            Input.EXPECTED_TOOLS,
            Input.EXPECTED_STEPS,
        }
    )

    @classmethod
    def uses_judge(cls, options: Mapping[str, Any] | None) -> bool:
        """Whether the evaluator, built with these ``evaluator_options``, asks the run's
        judge: judge evaluators always; others only when an option says so (Argument
        correctness with ``judged: true``). A run without a judge warns about these."""
        return cls.requires is Requirement.JUDGE

    @property
    def options(self) -> OptionsT:
        """The run-wide settings, validated, typed as this evaluator's options model."""
        return self._options

    @cached_property
    def asks_judge(self) -> bool:
        """Whether this evaluator, as built for the run, asks the judge (see
        :meth:`uses_judge`): a case's judge usage is recorded when any of its does. Its
        options are set when it is built, so this is worked out once, not once per case."""
        return self.uses_judge(self.options.model_dump())

    @classmethod
    def applies_to(cls, sample: Sample) -> bool:
        """Whether the case gives this evaluator something to score, judged from the suite
        alone. When the event names no metric, evaluators that apply to no case are left
        out of the run instead of filling the reports with skipped columns. Override when
        scope depends on more than inputs (categories, a per-case schema, ...)."""
        return all(sample.has(i) for i in cls.inputs & cls._CASE_INPUTS)

    @classmethod
    def check_case(cls, sample: Sample) -> list[str]:
        """Problems in a case's own inputs that must stop the run at Prepare, before any
        target is called (a condition that does not parse, a schema that is not JSON).
        Each message says what is wrong and where; the caller adds the row."""
        return []

    def summarize(
        self, samples: Sequence[Sample], results: Sequence[Sequence[MetricResult]]
    ) -> dict[str, Any] | None:
        """Run-level figures that no per-case score can hold (a confusion matrix, macro F1).
        Called by Aggregate with every answered case; JSON-serialisable or None."""
        return None

    @classmethod
    def primary_metric(cls) -> MetricSpec:
        return next((m for m in cls.metrics if m.primary), cls.metrics[0])

    def threshold(self, metric: str) -> float:
        return self._thresholds[metric]

    def missing_inputs(self, sample: Sample) -> list[Input]:
        return [i for i in sorted(self.inputs) if not sample.has(i)]

    def evaluate(self, sample: Sample) -> list[MetricResult]:
        """Score one sample; never raises, so one broken case cannot take the run down."""
        missing = self.missing_inputs(sample)
        if missing:
            reason = "skipped: " + "; ".join(_INPUT_HINTS[i] for i in missing)
            return self._all(status="skipped", reason=reason)
        try:
            raw = self.score(sample)
        except SkipCase as skip:
            return self._all(status="skipped", reason=f"skipped: {skip.reason}")
        except ModelUnavailable as exc:
            return self._all(status="skipped", reason=f"skipped: {exc.message}")
        except JudgeParseError as exc:  # counted per metric, never NaN, never a silent 0
            return self._all(status="error", reason=f"parsing failure: {exc.message}")
        except JudgeError as exc:
            return self._all(status="error", reason=f"error: judge: {exc.message}")
        except Exception as exc:  # an evaluator bug or bad data affects this case only
            return self._all(status="error", reason=f"error: {type(exc).__name__}: {exc}")
        return self.apply_thresholds(raw)

    def apply_thresholds(self, raw: Mapping[str, Scored]) -> list[MetricResult]:
        """Apply thresholds and direction to raw scores (shared by per-case and batched paths)."""
        results = []
        for spec in self.metrics:
            scored = raw.get(spec.name)
            if scored is None:
                results.append(self._one(spec, status="error", reason="error: no score produced"))
                continue
            if isinstance(scored, Unscored):
                results.append(self._one(spec, status=scored.status, reason=scored.reason))
                continue
            value = float(scored.value)
            if not math.isfinite(value):
                results.append(self._one(spec, status="error", reason=f"error: score is {value}"))
                continue
            threshold = self.threshold(spec.name)
            results.append(
                MetricResult(
                    evaluator=self.name,
                    metric=spec.name,
                    status="scored",
                    score=value,
                    success=spec.passes(value, threshold),
                    threshold=threshold,
                    reason=scored.reason,
                    parts=scored.parts,
                )
            )
        return results

    @abstractmethod
    def score(self, sample: Sample) -> Mapping[str, Scored]:
        """Raw score per metric name. Only called when every declared input is present."""

    def _one(self, spec: MetricSpec, *, status: Status, reason: str) -> MetricResult:
        return MetricResult(
            evaluator=self.name,
            metric=spec.name,
            status=status,
            threshold=self.threshold(spec.name),
            reason=reason,
        )

    def _all(self, *, status: Status, reason: str) -> list[MetricResult]:
        return [self._one(spec, status=status, reason=reason) for spec in self.metrics]


class BatchEvaluator(Evaluator[OptionsT]):
    """An evaluator whose model work is done once for the whole run (the Score step).

    ``score_batch`` receives every sample that has the declared inputs and returns one raw
    result per sample, in order: a score mapping, or for a sample it cannot score a
    :class:`SkipCase` (skipped with its reason) or another exception (an error for that
    sample only). Batching, deduplication and device placement are its business.
    """

    requires: ClassVar[Requirement] = Requirement.GPU_BATCH

    def score(self, sample: Sample) -> Mapping[str, Scored]:
        raw = self.score_batch([sample])[0]
        if isinstance(raw, BaseException):
            raise raw
        return raw

    @abstractmethod
    def score_batch(self, samples: Sequence[Sample]) -> Sequence[Mapping[str, Scored] | Exception]:
        """Raw scores for many samples at once."""

    def model_unavailable(self, exc: ModelUnavailable) -> str:
        """The per-case reason when the model is missing (model evaluators also report the
        full message once for the run)."""
        return f"skipped: {exc.message}"

    def evaluate_batch(self, samples: Sequence[Sample]) -> list[list[MetricResult]]:
        """Evaluate many samples; skips and failures are per sample, like ``evaluate``."""
        out: list[list[MetricResult] | None] = [None] * len(samples)
        ready: list[int] = []
        for i, sample in enumerate(samples):
            missing = self.missing_inputs(sample)
            if missing:
                reason = "skipped: " + "; ".join(_INPUT_HINTS[m] for m in missing)
                out[i] = self._all(status="skipped", reason=reason)
            else:
                ready.append(i)
        if ready:
            try:
                raws = self.score_batch([samples[i] for i in ready])
            except ModelUnavailable as exc:  # never a made-up score: the evaluator is skipped
                reason = self.model_unavailable(exc)
                for i in ready:
                    out[i] = self._all(status="skipped", reason=reason)
            except Exception as exc:
                reason = f"error: {type(exc).__name__}: {exc}"
                for i in ready:
                    out[i] = self._all(status="error", reason=reason)
            else:
                for i, raw in zip(ready, raws, strict=True):
                    out[i] = self._finish(raw)
        return [r for r in out if r is not None]

    def _finish(self, raw: Mapping[str, Scored] | Exception) -> list[MetricResult]:
        if isinstance(raw, SkipCase):
            return self._all(status="skipped", reason=f"skipped: {raw.reason}")
        if isinstance(raw, Exception):
            return self._all(status="error", reason=f"error: {type(raw).__name__}: {raw}")
        return self.apply_thresholds(raw)
