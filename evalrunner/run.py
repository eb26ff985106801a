"""The models that travel between the steps of a run: its configuration, the manifest items
the Distributed Map fans out over, the record each case leaves behind, and the scores file
the Score step leaves for Aggregate."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PlainSerializer,
    SerializerFunctionWrapHandler,
    field_serializer,
    field_validator,
    model_serializer,
)

from evalrunner.estimate.model import RunEstimate
from evalrunner.evaluators.base import MetricResult
from evalrunner.evaluators.judge_metrics import JudgeMetric
from evalrunner.judge.config import JudgeConfig
from evalrunner.perturb.spec import PerturbationSpec
from evalrunner.reports.verdict import VerdictPolicy
from evalrunner.sanitize import DEFAULT_MAX_TEXT_CHARS
from evalrunner.suite.model import TestCase
from evalrunner.targets.base import TargetResponse
from evalrunner.targets.registry import parse_spec
from evalrunner.targets.spec import TargetSpec

#: The run's target: its kind's spec model (parsed from the event's target object, or from
#: run.json), stored and shown as the user wrote it (:meth:`TargetSpec.as_written`), so a
#: typed configuration changes no byte of run.json or of the reports' configuration.
RunTarget = Annotated[
    TargetSpec,
    BeforeValidator(parse_spec),
    PlainSerializer(lambda spec: spec.as_written(), return_type=dict[str, Any]),
]


class RunConfig(BaseModel):
    """Everything a case task needs besides its case, written once by Prepare."""

    model_config = ConfigDict(extra="forbid")

    run_id: str
    bucket: str
    suite_key: str
    suite_name: str
    target: RunTarget
    target_kind: str
    target_name: str
    iterations: int
    metrics: list[str]
    #: Modules of the user's own metrics that every step imports before building its
    #: evaluators (module names, absolute .py paths): metrics cross steps by name.
    plugins: list[str] = Field(default_factory=list)
    #: Named judge metrics (GEval, BYOP) that every step defines before building its
    #: evaluators: their names are in ``metrics``, their settings only here.
    judge_metrics: list[JudgeMetric] = Field(default_factory=list)
    thresholds: dict[str, float] = Field(default_factory=dict)
    fail_under: dict[str, float] = Field(default_factory=dict)
    evaluator_options: dict[str, dict[str, Any]] = Field(default_factory=dict)
    baseline: str | None = None
    #: The run whose stored answers this one scores again (``evalrunner rescore``), if any.
    rescored_from: str | None = None
    #: What fails the run: Aggregate's verdict reads it (reports/verdict.py).
    policy: VerdictPolicy = Field(default_factory=VerdictPolicy)
    #: The judge for judge metrics (None: they are skipped with a reason).
    judge: JudgeConfig | None = None
    started_at: str = Field(description="UTC, ISO 8601")
    report_prefix: str = Field(description="test-reports/<target>/<yymmdd-hhmmss>-")
    case_count: int
    item_count: int
    #: Characters of each text (answer, each context, ...) evaluators examine.
    max_text_chars: int = DEFAULT_MAX_TEXT_CHARS
    #: The event's perturbations, resolved; the perturbed cases are in the manifest.
    perturbations: list[PerturbationSpec] = Field(default_factory=list)
    #: What Prepare estimated the run would cost (summary.json shows it beside the actual).
    estimate: RunEstimate | None = None


class ManifestItem(BaseModel):
    """One case × iteration: the unit of work of the Distributed Map."""

    model_config = ConfigDict(extra="forbid")

    item_id: str
    iteration: int = Field(ge=1)
    case: TestCase


class ManifestBatch(BaseModel):
    """Items ``first`` .. ``first + count - 1`` of the manifest: what one Map item (one
    RunCase task) runs, one after another.

    The Map fans out over these references, not over the cases themselves: a task costs the
    interpreter, a Lambda invoke and a state transition whatever it holds, so many cases per
    task make a large run cheaper in the cloud and faster in the embedded engine, and a
    reference stays a few bytes however large its cases are (a Map item's input is limited to
    256 KiB). The task reads its items from the manifest."""

    model_config = ConfigDict(extra="forbid")

    first: int = Field(ge=0)
    count: int = Field(ge=1)


#: What became of a case, or of one turn of a conversation (``not_run``: an earlier turn of
#: its conversation failed, so it was never asked).
CaseStatus = Literal["ok", "target_error", "task_failed", "not_run"]


class CaseRecord(BaseModel):
    """What one case × iteration produced. Written by run_case; never dropped.

    A scripted conversation has one record (its conversation metrics, the session it ran in)
    that carries one record per turn in ``turns``; Aggregate flattens them into rows."""

    model_config = ConfigDict(extra="forbid")

    item_id: str
    case_id: str
    index: int
    iteration: int
    status: CaseStatus
    response: TargetResponse | None = None
    latency_ms: float | None = None
    error: str | None = None
    results: list[MetricResult] = Field(default_factory=list)
    #: Judge calls and tokens spent on this case (None when no judge metric ran).
    judge_usage: dict[str, Any] | None = None
    #: Untrusted text of this case had characters replaced (see ``notes``).
    sanitized: bool = False
    #: Text was cut to the run's ``max_text_chars`` before evaluators saw it (see ``notes``).
    truncated: bool = False
    #: What the runner changed about this case's text, and why, one sentence each.
    notes: list[str] = Field(default_factory=list)
    #: A conversation's turns, in order (each scored like a single-turn case).
    turns: list[CaseRecord] = Field(default_factory=list)
    #: The session a conversation ran in (sent to the target with every turn).
    session_id: str | None = None

    @classmethod
    def for_item(
        cls,
        item: ManifestItem,
        status: CaseStatus = "ok",
        error: str | None = None,
    ) -> CaseRecord:
        return cls(
            item_id=item.item_id,
            case_id=item.case.case_id,
            index=item.case.index,
            iteration=item.iteration,
            status=status,
            error=error,
        )


class PrepareOutput(BaseModel):
    """The small state passed along the state machine (well below the 256 KiB payload limit)."""

    run_id: str
    bucket: str
    manifest_key: str
    #: The Map's items: a JSON list of :class:`ManifestBatch`.
    batches_key: str
    item_count: int
    #: Manifest items per RunCase task (the event's ``cases_per_task``, or the one chosen).
    cases_per_task: int = 1
    max_concurrency: int
    tolerated_failure_percentage: float
    target_name: str
    #: Whether any selected evaluator needs the batched model step; the state machine sends
    #: only such runs (above a size) to the GPU Batch job.
    batch_scoring: bool = False


class ModelNotice(BaseModel):
    """A model the Score step could not load: once per model, with every evaluator it
    skipped (Aggregate turns those into a high problem) or that the run's judge scored
    instead (a low one, so the run says which scored them), and how to provide it."""

    model: str
    role: str
    #: The evaluators skipped for want of it.
    evaluators: list[str] = Field(default_factory=list)
    #: The evaluators the run's judge scored instead: evaluator -> the judge model.
    judged: dict[str, str] = Field(default_factory=dict)
    message: str
    how: str


class LoadedModel(BaseModel):
    """A model the Score step loaded: where from, on what, and how long it took."""

    role: str
    path: str
    device: str
    precision: str
    load_seconds: float


class ModelWork(BaseModel):
    """A loaded model's work: texts asked for, texts computed (the rest were cached), batches."""

    requested: int
    computed: int
    batches: int


class ModelsUsed(BaseModel):
    """What the run's model metrics were scored with; regressions compare model metrics only
    between runs scored with the same models (``by_evaluator``)."""

    device: str
    models: dict[str, LoadedModel] = Field(default_factory=dict)
    work: dict[str, ModelWork] = Field(default_factory=dict)
    #: evaluator -> the model(s) behind its scores, comma-separated
    by_evaluator: dict[str, str] = Field(default_factory=dict)


class ScoresFile(BaseModel):
    """``runs/<run_id>/scores.json``: what the Score step (a Lambda or the GPU task) leaves for
    Aggregate. A run without model metrics writes it empty; a run whose Score step failed
    has none, and reads as empty."""

    #: item id -> the batched evaluators' results for that case × iteration
    items: dict[str, list[MetricResult]] = Field(default_factory=dict)
    notices: list[ModelNotice] = Field(default_factory=list)
    #: None when no model was needed (written as ``{}``, as it always was)
    models: ModelsUsed | None = None
    #: The judge calls the Score step made (an evaluator the run's judge scored in place of
    #: its missing model), counted into the run's judge totals; written only when some were.
    judge_usage: dict[str, int] | None = None

    @field_validator("models", mode="before")
    @classmethod
    def _empty_is_none(cls, value: Any) -> Any:
        return value or None

    @field_serializer("models", mode="wrap")
    def _none_is_empty(
        self, value: ModelsUsed | None, handler: SerializerFunctionWrapHandler
    ) -> Any:
        return {} if value is None else handler(value)

    @model_serializer(mode="wrap")
    def _judge_usage_when_used(self, handler: SerializerFunctionWrapHandler) -> Any:
        data = handler(self)
        if self.judge_usage is None and isinstance(data, dict):
            data.pop("judge_usage", None)
        return data


class StepFailure(BaseModel):
    """What Step Functions' Catch hands on when a task or the Map failed (``{"Error",
    "Cause"}``), and what the local engine hands Aggregate for a stopped run. Parsed at the
    door so no step reads a failure by key."""

    model_config = ConfigDict(populate_by_name=True)

    error: str | None = Field(default=None, alias="Error")
    cause: str | None = Field(default=None, alias="Cause")

    def text(self) -> str:
        """``Error: Cause`` (the error alone when there is no cause), for reports."""
        error = self.error or "error"
        return f"{error}: {self.cause}" if self.cause else error


def _no_failure(value: Any) -> Any:
    """An empty failure (``{}``, ``null``) is no failure, as Aggregate always read it."""
    return value or None


class RunCaseEvent(BaseModel):
    """What the state machine sends a RunCase task: the run, a batch of its manifest (or,
    from an execution started before batches, one manifest item), and on the Catch path the
    task's failure (the task then records it instead of running the cases)."""

    model_config = ConfigDict(extra="forbid")

    run_id: str
    bucket: str | None = None
    #: A batch and an item share no field name (both forbid extras): the shape picks one.
    item: ManifestBatch | ManifestItem
    failure: StepFailure | None = None

    _failure_given = field_validator("failure", mode="before")(_no_failure)


class CaseReply(BaseModel):
    """What became of one case (the reply of a single-item task from an older execution,
    and what :func:`~evalrunner.pipeline.run_case.run_batch` counts)."""

    item_id: str
    status: CaseStatus
    #: The target's or the task's error, redacted (the execution history keeps it).
    error: str | None = None
    #: True when the case already had a successful record and was not run again.
    reused: bool | None = None

    def wire(self) -> dict[str, Any]:
        """The reply as the state machine has always received it: unset fields left out."""
        return self.model_dump(mode="json", exclude_none=True)


class BatchReply(BaseModel):
    """What a RunCase task returns to the state machine: counts (the local engine's
    progress) and the batch still to run (None when the task ran all of its cases)."""

    done: int
    errors: int
    remaining: ManifestBatch | None = None


class RunRef(BaseModel):
    """The run a Score task works on (``{"run_id", "bucket"}``)."""

    run_id: str
    bucket: str | None = None


class ScoreReply(BaseModel):
    """What the Score step says it did (its scores go to the run's
    :class:`ScoresFile`, which can be far larger than a Lambda reply may be): the evaluators
    it scored, the samples, and the models that were not available."""

    evaluators: list[str]
    samples: int
    models_unavailable: list[str] | None = None

    def wire(self) -> dict[str, Any]:
        """The reply as it has always been: ``models_unavailable`` only when some were."""
        return self.model_dump(mode="json", exclude_none=True)


class AggregateState(BaseModel):
    """The state machine's state when Aggregate runs: Prepare's output with, where a step
    failed, the Map's and the Score step's failures. Aggregate reads only these fields; the
    rest of the state (the scoring plan, Prepare's figures) is ignored, so executions started
    by an older state machine still aggregate."""

    model_config = ConfigDict(extra="ignore")

    run_id: str
    bucket: str | None = None
    map_failure: StepFailure | None = None
    score_failure: StepFailure | None = None

    _failures_given = field_validator("map_failure", "score_failure", mode="before")(_no_failure)


class AggregateEvent(BaseModel):
    """The Aggregate task's payload: ``{"state": <the state>}``."""

    state: AggregateState
