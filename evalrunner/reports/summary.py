"""The run summary: what Aggregate returns as the execution's output and writes as
``summary.json``, and what every reader of a finished run reads (the CLI's table and exit
code, the SNS notification, the CloudWatch metrics, the baseline lookup, the local and remote
engines' downloads).

Defined once here, so a reader cannot ask for a key the writer never wrote. The JSON is the
same as when the summary was a dict: the same keys in the same order, None written as null.
Fields that older summaries lack (an execution output of an older deployed stack) have
defaults, so those still read.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, Field, ValidationError

from evalrunner.errors import ExecutionFailed
from evalrunner.estimate.model import ActualFigures, RunEstimate
from evalrunner.jsonout import dump_json
from evalrunner.reports.model import (
    CategoryStats,
    Gate,
    MetricStats,
    PerturbationFigures,
    PerturbationResult,
    Problem,
    Regression,
    Verdict,
)
from evalrunner.reports.verdict import RunVerdict, decide
from evalrunner.run import ModelsUsed

#: How many affected cases a problem carries in the summary (problems.json has them all).
SUMMARY_CASES = 20

#: Step Functions refuses execution output over 256 KiB; stay well below it.
MAX_OUTPUT_BYTES = 200_000


class MetricSummary(MetricStats):
    """A metric's statistics over the whole run (no iteration: the summary has no others)."""

    iteration: int | None = Field(default=None, exclude=True)


class SummaryProblem(Problem):
    """A problem with at most :data:`SUMMARY_CASES` of its affected cases, and their count."""

    affected_count: int

    @classmethod
    def of(cls, problem: Problem) -> SummaryProblem:
        cases = problem.affected_cases
        return cls.model_validate(
            {
                **problem.model_dump(),
                "affected_cases": cases[:SUMMARY_CASES],
                "affected_count": len(cases),
            }
        )


class RegressionVerdict(BaseModel):
    """The verdict against the baseline and its reasons; the full comparison (deltas, flipped
    cases) is in report.json."""

    verdict: Verdict
    baseline_run_id: str
    baseline_started_at: str
    reasons: list[str] = Field(default_factory=list)
    worse_metrics: list[str] = Field(default_factory=list)
    new_failures: int = 0
    fixed: int = 0
    #: perturbations whose robustness score dropped against the baseline
    worse_robustness: list[str] = Field(default_factory=list)

    @classmethod
    def of(cls, regression: Regression) -> RegressionVerdict:
        return cls(
            verdict=regression.verdict,
            baseline_run_id=regression.baseline_run_id,
            baseline_started_at=regression.baseline_started_at,
            reasons=regression.reasons,
            worse_metrics=[d.metric for d in regression.deltas if d.worse],
            new_failures=len(regression.new_failures),
            fixed=len(regression.fixed),
            worse_robustness=[r.name for r in regression.robustness if r.worse],
        )


class RobustnessSummary(PerturbationFigures):
    """One perturbation's robustness: how many original verdicts held under it; the flipped
    cases and per-metric figures are in report.json and the report's Robustness section."""

    #: passed, and fail once perturbed (antonym: still pass)
    broken: int
    #: failed, and pass once perturbed
    fixed: int
    #: metric -> how many compared cases it flipped pass -> fail
    pass_to_fail: dict[str, int] = Field(default_factory=dict)

    @classmethod
    def of(cls, p: PerturbationResult) -> RobustnessSummary:
        return cls(
            **p.model_dump(include=set(PerturbationFigures.model_fields)),
            broken=len(p.broken_cases),
            fixed=len(p.fixed_cases),
            pass_to_fail={m.metric: m.pass_to_fail for m in p.metrics if m.pass_to_fail},
        )


class JudgeTotals(BaseModel):
    """Judge calls and tokens of the run, and per answered case: what the judge cost."""

    calls: int
    cached: int
    input_tokens: int
    output_tokens: int
    retries: int
    parse_failures: int
    cases: int
    calls_per_case: float
    tokens_per_case: float


class RunReports(BaseModel):
    """The keys of the run's report set, in the order they are copied; the manifest last: a
    copy made in this order is complete only once its manifest is there."""

    details: str
    details_xlsx: str
    result: str
    problems: str
    insights: str
    html: str
    report: str
    summary: str
    manifest: str

    def keys(self) -> list[str]:
        """Every key, in order (the manifest last)."""
        return [str(v) for v in self.model_dump().values()]


class RunSummary(BaseModel):
    """One finished run, as the execution's output and ``summary.json``."""

    run_id: str
    target: str
    target_kind: str
    suite: str
    started_at: str
    finished_at: str
    iterations: int
    cases: int
    items: int
    #: None only in summaries written before it existed (see :meth:`answered_runs`)
    answered: int | None = None
    target_errors: int
    task_failures: int
    #: the Map or Score step's failure, when Aggregate ran after one
    step_failures: list[str] = Field(default_factory=list)
    #: the run was stopped part-way (a signal, a stall): these reports cover only the cases
    #: that finished; ``--resume <run_id>`` runs the rest. Never taken as a baseline.
    partial: bool = False
    #: why it stopped (``SIGTERM``, ``interrupted (Ctrl-C)``, the stall's reason)
    stopped_reason: str | None = None
    metrics: list[MetricSummary]
    #: evaluator -> its run-level figures (free-form: each evaluator defines its own)
    run_metrics: dict[str, Any] = Field(default_factory=dict)
    #: every metric × every category the suite uses: average, pass rate, counts
    categories: list[CategoryStats] = Field(default_factory=list)
    gates: list[Gate] = Field(default_factory=list)
    gates_passed: bool = True
    regression: RegressionVerdict | None = None
    judge: JudgeTotals | None = None
    models: ModelsUsed | None = None
    problems: list[SummaryProblem] = Field(default_factory=list)
    #: one entry per perturbation of the run (empty without perturbations)
    robustness: list[RobustnessSummary] = Field(default_factory=list)
    #: what Prepare estimated before the run (``evalrunner estimate``), and what it measured
    estimate: RunEstimate | None = None
    actual: ActualFigures | None = None
    bucket: str
    reports: RunReports
    #: The run's one verdict (passed, failed, regressed, not measured, partial) and its
    #: reasons, made by Aggregate; every reader of the run reads this. A summary written
    #: before it existed gets it from its own figures, by the default policy.
    verdict: RunVerdict = Field(default_factory=lambda data: _verdict_of_summary(data))
    #: The run whose stored answers this run scored again (``evalrunner rescore``): the
    #: link to the original, which is also this run's baseline. None for an ordinary run.
    rescored_from: str | None = None

    def answered_runs(self) -> int:
        """How many case × iteration runs got an answer (summaries written before
        ``answered`` existed count it from their failures)."""
        if self.answered is not None:
            return self.answered
        return self.items - self.target_errors - self.task_failures

    @property
    def regressed(self) -> bool:
        return self.regression is not None and self.regression.verdict == "regression"


def _verdict_of_summary(data: dict[str, Any]) -> RunVerdict:
    regression: RegressionVerdict | None = data.get("regression")
    items: int = data["items"]
    answered = data.get("answered")
    return decide(
        items=items,
        answered=(
            answered
            if answered is not None
            else items - data["target_errors"] - data["task_failures"]
        ),
        stats=data["metrics"],
        gates=data.get("gates", []),
        regressed=regression is not None and regression.verdict == "regression",
        regression_reasons=regression.reasons if regression else (),
        baseline_run_id=regression.baseline_run_id if regression else None,
        partial=data.get("partial", False),
        stopped_reason=data.get("stopped_reason"),
    )


def fit_output(summary: RunSummary, limit: int = MAX_OUTPUT_BYTES) -> dict[str, Any]:
    """The summary as the execution's output (JSON-ready): whole when it fits, else without
    the parts that grow with the run (run-level figures, problems, per-metric details), which
    stay in summary.json, so a large run cannot fail at its very last step. A cut output says
    ``"truncated": true``; :func:`summary_of_output` reads the whole summary back."""
    whole = summary.model_dump(mode="json")
    if len(dump_json(whole).encode()) <= limit:
        return whole
    trimmed = {**whole, "truncated": True}
    trimmed["run_metrics"] = {name: "see summary.json" for name in whole["run_metrics"]}
    trimmed["categories"] = []  # in summary.json
    trimmed["problems"] = [
        {k: p[k] for k in ("severity", "type", "metric", "affected_count") if k in p}
        for p in whole["problems"]
    ]
    if len(dump_json(trimmed).encode()) > limit:
        keep = ("metric", "evaluator", "primary", "average", "pass_rate", "count", "threshold")
        trimmed["metrics"] = [{k: m.get(k) for k in keep} for m in whole["metrics"]]
    return trimmed


def summary_of_output(output: dict[str, Any], read: Callable[[str], bytes]) -> RunSummary:
    """The typed summary behind an execution output: the output itself when whole; when
    :func:`fit_output` cut it, the run's summary.json, fetched with ``read(key)``.

    Raises :class:`ExecutionFailed` when the output is not a run summary (a state machine
    that is not evalrunner's, or a stack far older than this client)."""
    try:
        if not output.get("truncated"):
            return RunSummary.model_validate(output)
        key = RunReports.model_validate(output.get("reports")).summary
        return RunSummary.model_validate_json(read(key))
    except ValidationError as exc:
        raise ExecutionFailed(
            "the execution succeeded but its output is not an evalrunner run summary "
            f"({exc.error_count()} problems, first: {_first_error(exc)}); is the state "
            "machine evalrunner's, and deployed from this version?"
        ) from None


def _first_error(exc: ValidationError) -> str:
    error = exc.errors()[0]
    where = ".".join(str(p) for p in error["loc"]) or "(top)"
    return f"{where}: {error['msg']}"


__all__ = [
    "MAX_OUTPUT_BYTES",
    "SUMMARY_CASES",
    "JudgeTotals",
    "MetricSummary",
    "RegressionVerdict",
    "RobustnessSummary",
    "RunReports",
    "RunSummary",
    "SummaryProblem",
    "fit_output",
    "summary_of_output",
]
