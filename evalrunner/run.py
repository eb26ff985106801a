"""The models that travel between the steps of a run: its configuration, the manifest items
the Distributed Map fans out over, and the record each case leaves behind."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from evalrunner.evaluators.base import MetricResult
from evalrunner.sanitize import DEFAULT_MAX_TEXT_CHARS
from evalrunner.suite.model import TestCase
from evalrunner.targets.base import TargetResponse


class RunConfig(BaseModel):
    """Everything a case task needs besides its case, written once by Prepare."""

    model_config = ConfigDict(extra="forbid")

    run_id: str
    bucket: str
    suite_key: str
    suite_name: str
    target: dict[str, Any]
    target_kind: str
    target_name: str
    iterations: int
    metrics: list[str]
    thresholds: dict[str, float] = Field(default_factory=dict)
    fail_under: dict[str, float] = Field(default_factory=dict)
    evaluator_options: dict[str, dict[str, Any]] = Field(default_factory=dict)
    baseline: str | None = None
    judge: dict[str, Any] | None = None
    started_at: str = Field(description="UTC, ISO 8601")
    report_prefix: str = Field(description="test-reports/<target>/<yymmdd-hhmmss>-")
    case_count: int
    item_count: int
    #: Characters of each text (answer, each context, ...) evaluators examine.
    max_text_chars: int = DEFAULT_MAX_TEXT_CHARS


class ManifestItem(BaseModel):
    """One case × iteration: the unit of work of the Distributed Map."""

    model_config = ConfigDict(extra="forbid")

    item_id: str
    iteration: int = Field(ge=1)
    case: TestCase


class CaseRecord(BaseModel):
    """What one case × iteration produced. Written by run_case; never dropped."""

    model_config = ConfigDict(extra="forbid")

    item_id: str
    case_id: str
    index: int
    iteration: int
    status: Literal["ok", "target_error", "task_failed"]
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

    @classmethod
    def for_item(
        cls,
        item: ManifestItem,
        status: Literal["ok", "target_error", "task_failed"] = "ok",
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
    item_count: int
    max_concurrency: int
    tolerated_failure_percentage: float
    target_name: str
    #: Whether any selected evaluator needs the batched model step; the state machine sends
    #: only such runs (above a size) to the GPU Batch job.
    batch_scoring: bool = False
