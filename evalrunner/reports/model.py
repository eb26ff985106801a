"""The data every report is rendered from. Aggregate builds it once; the CSV, JSON, xlsx and
HTML renderings, the regression check and the problem/insight analysis all read this, so they
can never disagree with each other."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SerializerFunctionWrapHandler, model_serializer

from evalrunner.evaluators.base import MetricResult
from evalrunner.reports.verdict import RunVerdict, decide
from evalrunner.suite.model import Perturbation
from evalrunner.targets.steps import AgentStep, ExpectedStep

Severity = Literal["high", "medium", "low"]


#: A run against its baseline.
Verdict = Literal["regression", "improvement", "no significant change"]


class CaseRow(BaseModel):
    """One case × iteration, flattened for reports."""

    model_config = ConfigDict(extra="forbid")

    case_id: str
    iteration: int
    categories: list[str] = Field(default_factory=list)
    question: str
    expected_answer: str | None = None
    answer: str | None = None
    contexts: list[str] = Field(default_factory=list)
    documents: list[str] = Field(default_factory=list)
    latency_ms: float | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    cost: float | None = None
    status: Literal["ok", "target_error", "task_failed", "not_run"]
    error: str | None = None
    #: The runner replaced characters in this case's text / cut it for evaluators.
    sanitized: bool = False
    truncated: bool = False
    #: What the runner changed on the way in, one line each: characters replaced, text cut,
    #: target-reported numbers ignored (the response's own notes are folded in by run_case).
    notes: list[str] = Field(default_factory=list)
    results: list[MetricResult] = Field(default_factory=list)
    #: Set on a perturbed copy of a case or a hand-written variant: its original and how.
    perturbation: Perturbation | None = None
    #: What an agent did (tools, knowledge bases, hand-overs), when the target reported it.
    steps: list[AgentStep] | None = None
    #: On a scripted conversation's own row and on each of its turns: the conversation.
    conversation_id: str | None = None
    #: On a turn of a conversation: its number (None on the conversation's own row).
    turn: int | None = None

    @property
    def is_conversation(self) -> bool:
        """The row of a whole conversation (its conversation metrics), not of one turn."""
        return self.conversation_id is not None and self.turn is None

    #: What the suite expected of an agent (its expected_tools / expected_steps cells).
    expected_tools: list[str] | None = None
    expected_steps: list[ExpectedStep] | None = None
    #: The rest of what the suite gave the case, kept so that ``evalrunner rescore`` scores
    #: the stored answers against the same expectations as the original run.
    expected_contexts: list[str] = Field(default_factory=list)
    expected_documents: list[str] = Field(default_factory=list)
    expected_intent: str | None = None
    expected_tool: str | None = None
    expected_data: str | None = None
    #: The suite's condition (text-matching constraints), kept as written.
    condition: str | list[Any] | None = None
    #: What the target reported besides its answer (None when it said nothing, or never
    #: answered): the intent it classified, the tool it chose, the data it retrieved.
    intent: str | None = None
    tool: str | None = None
    data: str | None = None
    #: The suite's own extra columns (what a metric of your own reads as ``sample.metadata``).
    metadata: dict[str, Any] = Field(default_factory=dict)

    def result(self, metric: str) -> MetricResult | None:
        return next((r for r in self.results if r.metric == metric), None)


class MetricInfo(BaseModel):
    """A metric column of the run."""

    metric: str
    evaluator: str
    primary: bool
    threshold: float
    higher_is_better: bool
    #: The model(s) that produced the scores (model metrics only): runs scored with other
    #: models are not compared.
    model: str | None = None


class MetricStats(BaseModel):
    """Statistics of one metric over the run (iteration None) or one iteration."""

    metric: str
    evaluator: str
    iteration: int | None = None
    primary: bool
    threshold: float
    higher_is_better: bool
    average: float | None = None
    pass_rate: float | None = None
    count: int = 0
    skipped: int = 0
    errored: int = 0
    min: float | None = None
    p10: float | None = None
    median: float | None = None
    max: float | None = None
    std: float | None = None
    #: Mean over cases of the spread (max − min) of the case's score across iterations;
    #: None with one iteration. High instability: the target (or judge) is not repeatable.
    instability: float | None = None


class CategoryStats(BaseModel):
    """One metric over the cases of one category."""

    category: str
    metric: str
    evaluator: str
    primary: bool
    average: float | None = None
    pass_rate: float | None = None
    count: int = 0
    skipped: int = 0
    errored: int = 0


class Finding(BaseModel):
    """A red-team finding (a ``redteam`` problem): what kind of vulnerability the successful
    attacks show, and where it sits in the OWASP Top 10 for LLM Applications and AVID."""

    model_config = ConfigDict(extra="forbid")

    #: The red-team plugin (``prompt-injection``, ``pii-extraction``, ...) and its title.
    plugin: str
    title: str
    #: The kind of risk (``prompt injection``, ``sensitive information disclosure``, ...).
    category: str
    #: OWASP Top 10 for LLM Applications 2025 ids with names (``LLM01:2025 Prompt Injection``).
    owasp: list[str]
    #: AVID taxonomy ids with names (``S0403 Adversarial Example``).
    avid: list[str]
    #: Attacks of this plugin run, and how many succeeded.
    attacks: int
    succeeded: int
    #: Successful attacks per strategy (``none``: as the plugin wrote them).
    strategies: dict[str, int] = Field(default_factory=dict)


class Problem(BaseModel):
    severity: Severity
    type: str  # below_threshold, regression, target_errors, task_failures, empty_context, ...
    description: str
    affected_cases: list[str] = Field(default_factory=list)
    suggested_action: str
    metric: str | None = None
    #: On a ``redteam`` problem only: the finding's type and references.
    finding: Finding | None = None

    @model_serializer(mode="wrap")
    def _without_empty_finding(self, handler: SerializerFunctionWrapHandler) -> Any:
        """Every other problem serialises as it always has (no ``finding: null``)."""
        data = handler(self)
        if self.finding is None and isinstance(data, dict):
            data.pop("finding", None)
        return data


class Gate(BaseModel):
    """One ``fail_under`` condition and its verdict: the run's exit code is read from these."""

    metric: str  # the metric measured (an evaluator named in the gate means its primary)
    gate: str  # the name as the user wrote it
    threshold: float
    average: float | None = None
    passed: bool
    higher_is_better: bool = True


class Insight(BaseModel):
    type: str  # weakest_metric, most_difficult_case, slowest, fastest, costliest, best_target..
    description: str
    affected_cases: list[str] = Field(default_factory=list)
    suggested_action: str | None = None
    metric: str | None = None
    value: float | None = None


class MetricDelta(BaseModel):
    metric: str
    evaluator: str
    higher_is_better: bool
    baseline_average: float | None
    current_average: float | None
    delta: float | None  # current − baseline
    ci_low: float | None  # bootstrap 95% interval of the delta
    ci_high: float | None
    significant: bool  # the interval excludes 0
    worse: bool  # significant and in the bad direction


class CaseFlip(BaseModel):
    case_id: str
    metric: str
    before: bool  # success in the baseline (all iterations passed)
    after: bool


class RobustnessFlip(BaseModel):
    """A metric whose verdict on a case changed under a perturbation."""

    case_id: str  # the original
    perturbed_case_id: str
    metric: str
    before: bool  # the original passed (all iterations)
    after: bool  # the perturbed copy passed
    before_score: float | None = None  # mean over scored iterations
    after_score: float | None = None


class RobustnessMetric(BaseModel):
    """One metric under one perturbation: how often its verdict held, how many flipped each
    way, and how far its average moved (perturbed − original, over the same cases)."""

    metric: str
    evaluator: str
    primary: bool
    higher_is_better: bool
    compared: int  # originals with a verdict on both sides
    held: int  # as expected: verdict kept (antonym: a passing case failed)
    score: float | None  # held / compared
    pass_to_fail: int
    fail_to_pass: int
    original_average: float | None = None
    perturbed_average: float | None = None
    delta: float | None = None
    ci_low: float | None = None  # paired bootstrap 95% interval of the delta
    ci_high: float | None = None


class PerturbationFigures(BaseModel):
    """What a perturbation is and how many original verdicts held under it: the part of a
    perturbation's result that summary.json carries too (:class:`PerturbationResult` adds
    the cases and flips, ``RobustnessSummary`` their counts)."""

    name: str
    kind: str
    intensity: float | None = None
    seed: int | None = None
    #: a perturbation that must change the answer (antonym): holding means flipping
    expect_flip: bool = False
    #: originals with a perturbed copy (a perturbation that changes nothing makes none)
    cases: int
    #: originals with a verdict (all primary metrics) on both sides; for expect_flip, the
    #: originals that passed
    compared: int
    held: int
    #: share of the compared originals whose verdict held (antonym: that flipped as it must)
    score: float | None


class PerturbationResult(PerturbationFigures):
    """One perturbation of the run and what it did to the verdicts of the cases."""

    held_cases: list[str] = Field(default_factory=list)
    #: robustness failures: passed and fail when perturbed (antonym: still pass)
    broken_cases: list[str] = Field(default_factory=list)
    #: failed and pass when perturbed: noted, not a failure
    fixed_cases: list[str] = Field(default_factory=list)
    metrics: list[RobustnessMetric] = Field(default_factory=list)
    flips: list[RobustnessFlip] = Field(default_factory=list)


class RobustnessChange(BaseModel):
    """A perturbation's robustness score against the baseline's: worse when a case whose
    verdict held in the baseline no longer holds."""

    name: str
    baseline_score: float | None
    current_score: float | None
    newly_broken: list[str] = Field(default_factory=list)
    worse: bool


class Regression(BaseModel):
    """Comparison with a baseline run of the same target and suite."""

    baseline_run_id: str
    baseline_started_at: str
    baseline_report_prefix: str
    verdict: Verdict
    reasons: list[str] = Field(default_factory=list)
    deltas: list[MetricDelta] = Field(default_factory=list)
    new_failures: list[CaseFlip] = Field(default_factory=list)  # pass -> fail
    fixed: list[CaseFlip] = Field(default_factory=list)  # fail -> pass
    robustness: list[RobustnessChange] = Field(default_factory=list)


class WeakSpot(BaseModel):
    """A group of cases the target does worse on than on the run as a whole: cases whose
    questions are alike (``questions``) or that share a suite category (``category``)."""

    name: str
    kind: Literal["questions", "category"]
    cases: list[str]
    failing: list[str]  # cases with a failed primary result
    #: Share of the group's scored primary results that passed, and the run's share.
    pass_rate: float
    run_pass_rate: float
    example_case: str  # the group's worst case
    example_question: str
    example_reason: str | None = None
    #: Well below the run's pass rate: reported as a problem of type ``weakness``.
    weak: bool = False


class ReportData(BaseModel):
    """Everything about one run that a report shows. Frozen: Aggregate builds it in stages,
    each a copy with one analysis added (``model_copy(update=...)``), and every writer and
    reader after it sees the one data that was built."""

    model_config = ConfigDict(frozen=True)

    run_id: str
    target: str
    target_kind: str
    suite: str
    #: Where this run's reports are: test-reports/<target>/<yymmdd-hhmmss>-
    report_prefix: str = ""
    started_at: str
    finished_at: str
    iterations: int
    config: dict[str, Any]  # the run's configuration as the user gave it (secrets masked)
    metrics: list[MetricInfo]
    stats: list[MetricStats]  # iteration None first (the run), then per iteration
    #: The suite's cases as written: every statistic, problem and comparison but robustness
    #: is over these.
    rows: list[CaseRow]
    #: Perturbed copies and hand-written variants, for the robustness analysis (and
    #: details.csv); empty without perturbations.
    perturbed_rows: list[CaseRow] = Field(default_factory=list)
    robustness: list[PerturbationResult] = Field(default_factory=list)
    problems: list[Problem] = Field(default_factory=list)
    insights: list[Insight] = Field(default_factory=list)
    regression: Regression | None = None
    gates: list[Gate] = Field(default_factory=list)
    run_metrics: dict[str, Any] = Field(default_factory=dict)
    #: Groups of failing cases (reports/analysis/weakness.py), and how questions were compared.
    weak_spots: list[WeakSpot] = Field(default_factory=list)
    weak_spots_method: str | None = None
    #: Every metric × every category the suite uses (evalrunner.reports.analysis.categories).
    categories: list[CategoryStats] = Field(default_factory=list)
    #: Why the run was not compared with a baseline (None: it was).
    baseline_note: str | None = None
    #: The run was stopped part-way: only the cases that finished are scored here.
    partial: bool = False
    stopped_reason: str | None = None
    #: The run's verdict, made by Aggregate (:func:`evalrunner.reports.verdict.decide`);
    #: report data written before it existed gets it from its own figures, by default policy.
    verdict: RunVerdict = Field(default_factory=lambda data: _verdict_of_report(data))

    def run_stats(self) -> list[MetricStats]:
        return [s for s in self.stats if s.iteration is None]


def _verdict_of_report(data: dict[str, Any]) -> RunVerdict:
    rows: list[CaseRow] = data["rows"]
    regression: Regression | None = data.get("regression")
    return decide(
        items=len(rows),
        answered=sum(1 for r in rows if r.status == "ok"),
        stats=data["stats"],
        gates=data.get("gates", []),
        regressed=regression is not None and regression.verdict == "regression",
        regression_reasons=regression.reasons if regression else (),
        baseline_run_id=regression.baseline_run_id if regression else None,
        partial=data.get("partial", False),
        stopped_reason=data.get("stopped_reason"),
    )


class LeaderboardEntry(BaseModel):
    """One target's run in a comparison of targets on the same suite."""

    target: str
    run_id: str
    report_prefix: str
    averages: dict[str, float | None]  # metric -> average score
    pass_rates: dict[str, float | None]  # metric -> pass rate
    #: mean pass rate of the run's primary metrics, as the history page gives it (None:
    #: none was scored)
    pass_rate: float | None = None
    #: whether every fail_under gate of the run passed (None: the run had no gate)
    gates_passed: bool | None = None
    #: the run's one verdict's headline (PASSED, FAILED, REGRESSED, NOT MEASURED, PARTIAL), as
    #: Aggregate made it (None: a leaderboard written before verdicts)
    verdict: str | None = None
    latency_median_ms: float | None = None
    latency_p95_ms: float | None = None
    total_tokens: int | None = None
    total_cost: float | None = None
    errors: int = 0


class DifficultCase(BaseModel):
    case_id: str
    question: str
    failed_by: list[str]  # targets whose primary metrics failed on this case
    pass_share: dict[str, float]  # target -> share of (iterations × primary metrics) passed


class Leaderboard(BaseModel):
    suite: str
    created_at: str
    metrics: list[MetricInfo]
    entries: list[LeaderboardEntry]
    best_per_metric: dict[str, str]  # metric -> target (ties: first in entries order)
    difficult_cases: list[DifficultCase]  # most difficult first
    fastest: str | None = None
    slowest: str | None = None
    costliest: str | None = None
    cheapest: str | None = None
