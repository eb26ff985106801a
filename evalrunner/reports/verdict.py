"""A run's verdict: passed, failed, regressed, not measured or partial, with its reasons,
decided once by :func:`decide` and read by every surface (the exit code, the terminal
summary, summary.json, report.html's banner, the Markdown summary, JUnit XML, the history
page, ``EvalRun.passed`` and the pytest plugin). None of them looks at gates, pass rates or
the baseline on its own: two surfaces of one run cannot disagree.

The policy (:class:`VerdictPolicy`) says what fails a run; it comes from the event
(``fail_on``, ``fail_on_regression``, ``max_error_share``), so the run that is deployed and
the one on a laptop reach the same verdict. The default fails a run as DeepEval and promptfoo
do, when a case is below the threshold of a primary metric, because a CI job that stays green
while answers fail their metric is the surprise users report; ``fail_on: "regressions"`` is
the regression-only alternative. What decides, in order:

1. ``partial``: the run was stopped part-way (exit 3) — its figures cover part of the suite.
2. ``not_measured`` (exit 4): no target call succeeded; or (unless ``fail_on`` is
   ``never``) more than ``max_error_share`` of the target calls failed, a metric errored on
   more than that share of its cases (a judge that is down), or no metric scored anything.
3. ``regressed`` (exit 1): worse than the baseline, under ``fail_on: "regressions"`` or
   ``fail_on_regression``.
4. ``failed`` (exit 1): a ``fail_under`` gate failed (every policy but ``never``), or under
   ``fail_on: "failures"`` (the default) a case scored below a primary metric's threshold
   or a target call failed (within ``max_error_share``: beyond it, 2. applies).
5. ``passed`` (exit 0); what the policy saw but does not fail on is kept as ``notes``.
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import StrEnum
from typing import Protocol

from pydantic import BaseModel, ConfigDict, Field

from evalrunner.fail_on import FailOn

#: The default share of a metric's cases (or of the target calls) that may error before the
#: run is not measured: 10%, a share at which an average no longer describes the suite.
DEFAULT_MAX_ERROR_SHARE = 0.10

#: How many metrics a verdict's lists and reasons name (summary.json stays small).
NAMED = 20


class Outcome(StrEnum):
    PASSED = "passed"
    FAILED = "failed"
    REGRESSED = "regressed"
    NOT_MEASURED = "not_measured"
    PARTIAL = "partial"


#: The process exit code of each outcome (the README's table; ``evalrunner.cli.common``).
EXIT_CODES: dict[Outcome, int] = {
    Outcome.PASSED: 0,
    Outcome.FAILED: 1,
    Outcome.REGRESSED: 1,
    Outcome.PARTIAL: 3,
    Outcome.NOT_MEASURED: 4,
}

HEADLINES: dict[Outcome, str] = {
    Outcome.PASSED: "PASSED",
    Outcome.FAILED: "FAILED",
    Outcome.REGRESSED: "REGRESSED",
    Outcome.NOT_MEASURED: "NOT MEASURED",
    Outcome.PARTIAL: "PARTIAL",
}


class VerdictPolicy(BaseModel):
    """What fails a run: the event's ``fail_on``, ``fail_on_regression`` and
    ``max_error_share`` (the CLI's ``--fail-on``, ``--fail-on-regression``,
    ``--max-error-share``; ``evaluate(fail_on=...)``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    fail_on: FailOn = FailOn.FAILURES
    #: a regression fails the run whatever ``fail_on`` says (today's ``--fail-on-regression``)
    fail_on_regression: bool = False
    max_error_share: float = Field(default=DEFAULT_MAX_ERROR_SHARE, ge=0, le=1)

    def fails_on_regression(self) -> bool:
        return self.fail_on_regression or self.fail_on is FailOn.REGRESSIONS


class BelowThreshold(BaseModel):
    """A primary metric with cases that failed its threshold (scored below it, or above it
    for a metric where lower is better)."""

    metric: str
    failed: int
    scored: int
    average: float | None
    threshold: float
    higher_is_better: bool = True


class TooManyErrors(BaseModel):
    """A metric whose scoring errored on more than the allowed share of its cases."""

    metric: str
    errored: int
    attempted: int


class RunVerdict(BaseModel):
    """The one verdict of a run and why."""

    outcome: Outcome
    exit_code: int
    #: the words every surface shows: PASSED, FAILED, REGRESSED, NOT MEASURED, PARTIAL
    headline: str
    #: why the outcome is what it is, one sentence each (empty for a clean pass)
    reasons: list[str] = Field(default_factory=list)
    #: what the policy saw and does not fail on (e.g. a regression without
    #: ``fail_on_regression``), each with the option that would make it fail
    notes: list[str] = Field(default_factory=list)
    failed_gates: list[str] = Field(default_factory=list)
    below_threshold: list[BelowThreshold] = Field(default_factory=list)
    too_many_errors: list[TooManyErrors] = Field(default_factory=list)
    regressed: bool = False
    policy: VerdictPolicy = Field(default_factory=VerdictPolicy)

    @property
    def passed(self) -> bool:
        return self.outcome is Outcome.PASSED

    def regressed_fails(self) -> bool:
        """The run regressed and that is its outcome."""
        return self.outcome is Outcome.REGRESSED

    def line(self) -> str:
        """The verdict on one line: headline and the first reason (or note)."""
        why = self.reasons or self.notes
        return f"{self.headline}: {why[0]}" if why else self.headline


def _share(part: int, whole: int) -> str:
    return f"{part} of {whole} ({part / whole:.0%})"


class MetricFigures(Protocol):
    """What :func:`decide` reads of a metric's statistics (``reports.model.MetricStats``,
    which holds a :class:`RunVerdict`: the report model imports this module, so this one
    names only what it reads)."""

    @property
    def metric(self) -> str: ...
    @property
    def iteration(self) -> int | None: ...
    @property
    def primary(self) -> bool: ...
    @property
    def threshold(self) -> float: ...
    @property
    def higher_is_better(self) -> bool: ...
    @property
    def average(self) -> float | None: ...
    @property
    def pass_rate(self) -> float | None: ...
    @property
    def count(self) -> int: ...
    @property
    def errored(self) -> int: ...


class GateFigures(Protocol):
    """What :func:`decide` reads of a ``fail_under`` gate (``reports.model.Gate``)."""

    @property
    def gate(self) -> str: ...
    @property
    def passed(self) -> bool: ...
    @property
    def threshold(self) -> float: ...
    @property
    def higher_is_better(self) -> bool: ...
    @property
    def average(self) -> float | None: ...


def decide(
    *,
    items: int,
    answered: int,
    stats: Sequence[MetricFigures],
    gates: Sequence[GateFigures],
    regressed: bool,
    regression_reasons: Sequence[str] = (),
    baseline_run_id: str | None = None,
    partial: bool = False,
    stopped_reason: str | None = None,
    no_baseline: str | None = None,
    policy: VerdictPolicy | None = None,
) -> RunVerdict:
    """The verdict of a run from its figures (``stats``: run-wide statistics, one per metric)
    and its policy. The only place a run's verdict is made.

    ``no_baseline`` is why the run was compared with no baseline (None when it was): under a
    policy that fails on regressions it is a note, so every surface says the regression gate
    had nothing to check. It does not fail the run: a first run in CI has no baseline."""
    policy = policy or VerdictPolicy()
    run_wide = [s for s in stats if s.iteration is None]
    never = policy.fail_on is FailOn.NEVER
    limit = policy.max_error_share

    # what the run shows, whatever the policy
    call_errors = items - answered
    erroring = [
        TooManyErrors(metric=s.metric, errored=s.errored, attempted=s.count + s.errored)
        for s in run_wide
        if s.errored and s.errored / (s.count + s.errored) > limit
    ]
    nothing_scored = answered > 0 and bool(run_wide) and not any(s.count for s in run_wide)
    failed_gates = [g for g in gates if not g.passed]
    below = []
    for s in run_wide:
        if not s.primary or not s.count or s.pass_rate is None:
            continue
        passed = round(s.pass_rate * (s.count + s.errored))
        if s.count - passed > 0:
            below.append(
                BelowThreshold(
                    metric=s.metric,
                    failed=s.count - passed,
                    scored=s.count,
                    average=s.average,
                    threshold=s.threshold,
                    higher_is_better=s.higher_is_better,
                )
            )

    unmeasured: list[str] = []
    if not items:
        unmeasured.append("the run had no case to measure")
    elif not answered:
        unmeasured.append(f"no target call succeeded ({items} tried): nothing was measured")
    else:
        if items and call_errors / items > limit:
            unmeasured.append(
                f"{_share(call_errors, items)} target calls failed, more than the "
                f"{limit:.0%} allowed (max_error_share)"
            )
        for e in erroring[:NAMED]:
            unmeasured.append(
                f"{e.metric} errored on {e.errored} of its {e.attempted} cases "
                f"({e.errored / e.attempted:.0%}), more than the {limit:.0%} allowed "
                "(max_error_share): see the reasons in details.csv"
            )
        if nothing_scored:
            unmeasured.append("no metric scored any case: see the problems for why")

    gate_reasons = [
        f"gate {g.gate}: average "
        + ("no score" if g.average is None else f"{g.average:.3f}")
        + f", needs {'>=' if g.higher_is_better else '<='} {g.threshold}"
        for g in failed_gates
    ]
    call_reasons = (
        [
            f"{_share(call_errors, items)} target calls failed (the error column of "
            "details.csv says why)"
        ]
        if call_errors and answered
        else []
    )
    below_reasons = [
        f"{b.metric}: {b.failed} of {b.scored} scored cases "
        f"{'below' if b.higher_is_better else 'above'} the threshold {b.threshold} "
        f"(average {'—' if b.average is None else f'{b.average:.3f}'})"
        for b in below[:NAMED]
    ]
    against = f" against run {baseline_run_id}" if baseline_run_id else ""
    regression_lines = [f"regression{against}: {r}" for r in regression_reasons] or (
        [f"regression{against}"] if regressed else []
    )

    reasons: list[str] = []
    notes: list[str] = []
    if partial:
        outcome = Outcome.PARTIAL
        reasons.append(
            f"the run was stopped before it finished ({stopped_reason or 'stopped'}): only "
            "the cases that finished are scored"
        )
        # the unfinished cases count as failed calls and errored scores: shares of those say
        # nothing about the cases that finished, so they are not noted
        notes += gate_reasons + below_reasons
    elif not answered:
        outcome, reasons = Outcome.NOT_MEASURED, unmeasured
    elif unmeasured and not never:
        outcome, reasons = Outcome.NOT_MEASURED, unmeasured
    else:
        if never:
            notes += [f"{u} (not failing: fail_on is never)" for u in unmeasured]
        fails_regression = regressed and policy.fails_on_regression()
        fails_gates = bool(failed_gates) and not never
        fails_below = bool(below) and policy.fail_on is FailOn.FAILURES
        # a failed call is a failure of the system under test, like a case below threshold
        fails_calls = bool(call_reasons) and policy.fail_on is FailOn.FAILURES
        if fails_regression:
            reasons += regression_lines
        elif regressed:
            notes += [
                f"{line} (not failing: add --fail-on-regression or fail_on: regressions)"
                for line in regression_lines
            ]
        if fails_gates:
            reasons += gate_reasons
        elif failed_gates:
            notes += [f"{r} (not failing: fail_on is never)" for r in gate_reasons]
        for fails, lines in ((fails_calls, call_reasons), (fails_below, below_reasons)):
            if fails:
                reasons += lines
            else:
                notes += [f"{r} (not failing: fail_on is {policy.fail_on})" for r in lines]
        if no_baseline is not None and policy.fails_on_regression():
            gate = "--fail-on-regression" if policy.fail_on_regression else "fail_on: regressions"
            notes.append(
                f"{gate}: no verifiable baseline ({no_baseline}); this run was not checked "
                "for regressions"
            )
        if fails_regression:
            outcome = Outcome.REGRESSED
        elif fails_gates or fails_below or fails_calls:
            outcome = Outcome.FAILED
        else:
            outcome = Outcome.PASSED
    return RunVerdict(
        outcome=outcome,
        exit_code=EXIT_CODES[outcome],
        headline=HEADLINES[outcome],
        reasons=reasons,
        notes=notes,
        failed_gates=[g.gate for g in failed_gates],
        below_threshold=below[:NAMED],
        too_many_errors=[] if partial else erroring[:NAMED],
        regressed=regressed,
        policy=policy,
    )


__all__ = [
    "DEFAULT_MAX_ERROR_SHARE",
    "EXIT_CODES",
    "BelowThreshold",
    "FailOn",
    "Outcome",
    "RunVerdict",
    "TooManyErrors",
    "VerdictPolicy",
    "decide",
]
