"""The run folded per case, and the verdict: what the HTML report ranks and headlines.

A case's iterations are folded together (a :class:`Cell` per case × metric); cases are ranked
worst first by primary metrics failed (a target error counts as one), then pass share, then
mean score (turned so that higher is better), then run order.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field

from evalrunner.evaluators.base import MetricResult
from evalrunner.reports.model import CaseRow, MetricInfo, MetricStats, ReportData
from evalrunner.reports.verdict import Outcome
from evalrunner.reports.views.charts import Key, key
from evalrunner.reports.views.formatting import plural


@dataclass
class Cell:
    """One case × metric over the case's iterations."""

    results: list[MetricResult] = field(default_factory=list)

    @property
    def scores(self) -> list[float]:
        return [r.score for r in self.results if r.status == "scored" and r.score is not None]

    @property
    def judged(self) -> int:
        return sum(1 for r in self.results if r.status in ("scored", "error"))

    @property
    def passed(self) -> int:
        return sum(1 for r in self.results if r.status == "scored" and r.success is True)

    @property
    def failed(self) -> bool:
        return any(
            r.status == "error" or (r.status == "scored" and r.success is False)
            for r in self.results
        )

    @property
    def share(self) -> float | None:
        return self.passed / self.judged if self.judged else None

    @property
    def mean(self) -> float | None:
        scores = self.scores
        return statistics.fmean(scores) if scores else None


@dataclass
class Case:
    """A case with its iterations (rows) folded together."""

    case_id: str
    order: int
    rows: list[CaseRow] = field(default_factory=list)
    cells: dict[Key, Cell] = field(default_factory=dict)
    failing: list[Key] = field(default_factory=list)  # primary metrics failed at least once
    errored: bool = False  # the target or the task failed in some iteration
    share: float | None = None  # pass share over primary results
    goodness: float | None = None  # mean primary score, turned so that higher is better

    def cell(self, metric: Key) -> Cell:
        return self.cells.get(metric) or Cell()

    @property
    def badness(self) -> int:
        return len(self.failing) + (1 if self.errored else 0)

    def sort_key(self) -> tuple[float, float, float, int]:
        return (
            -self.badness,
            self.share if self.share is not None else -1.0,
            self.goodness if self.goodness is not None else -1.0,
            self.order,
        )


def aggregate(rows: Sequence[CaseRow], primary: Sequence[MetricInfo]) -> list[Case]:
    """Cases in run order, each with its iterations folded together."""
    cases: dict[str, Case] = {}
    for row in rows:
        case = cases.get(row.case_id)
        if case is None:
            case = cases[row.case_id] = Case(row.case_id, len(cases))
        case.rows.append(row)
        case.errored = case.errored or row.status != "ok"
        cells = case.cells
        for result in row.results:
            # not setdefault: its default, a new Cell, would be built for every result
            metric = key(result)
            cell = cells.get(metric)
            if cell is None:
                cell = cells[metric] = Cell()
            cell.results.append(result)
    direction = {key(m): m.higher_is_better for m in primary}
    for case in cases.values():
        case.rows.sort(key=lambda r: r.iteration)
        judged = passed = 0
        good: list[float] = []
        for metric, higher in direction.items():
            cell = case.cell(metric)
            if cell.failed:
                case.failing.append(metric)
            judged += cell.judged
            passed += cell.passed
            mean = cell.mean
            if mean is not None:
                good.append(mean if higher else 1.0 - mean)
        case.share = passed / judged if judged else (0.0 if case.errored else None)
        case.goodness = statistics.fmean(good) if good else None
    return list(cases.values())


def primary(metrics: Sequence[MetricInfo]) -> list[MetricInfo]:
    """The heatmap's and worst-case ranking's metrics: the primary ones (all, if none is)."""
    return [m for m in metrics if m.primary] or list(metrics)


def split(metrics: Sequence[MetricInfo]) -> tuple[list[MetricInfo], list[MetricInfo]]:
    """(primary, the others); when no metric is primary, all are shown as the main ones."""
    main = [m for m in metrics if m.primary]
    if not main:
        return list(metrics), []
    return main, [m for m in metrics if not m.primary]


def ordered(metrics: Sequence[MetricInfo]) -> list[MetricInfo]:
    """Primary metrics first, otherwise in run order."""
    return [m for m in metrics if m.primary] + [m for m in metrics if not m.primary]


def run_stats(data: ReportData) -> dict[Key, MetricStats]:
    return {key(s): s for s in data.stats if s.iteration is None}


def iteration_stats(data: ReportData) -> dict[Key, list[MetricStats]]:
    out: dict[Key, list[MetricStats]] = {}
    numbered = [(s.iteration, s) for s in data.stats if s.iteration is not None]
    for _, s in sorted(numbered, key=lambda pair: pair[0]):
        out.setdefault(key(s), []).append(s)
    return out


@dataclass(frozen=True)
class Verdict:
    """The banner: tone (bad / warn / good / neutral), headline and the reasons for it."""

    tone: str
    headline: str
    reasons: list[str]


#: The banner's tone for each outcome of the run's verdict.
TONES = {
    Outcome.PASSED: "good",
    Outcome.FAILED: "bad",
    Outcome.REGRESSED: "bad",
    Outcome.NOT_MEASURED: "bad",
    Outcome.PARTIAL: "warn",
}


def verdict(data: ReportData) -> Verdict:
    """The banner: the run's verdict (``data.verdict``, made once by Aggregate) with its
    reasons, then what it noted but does not fail on, then high-severity problems not said
    yet. A pass with notes or high problems is drawn in the warning tone."""
    run = data.verdict
    high = [
        p.description
        for p in data.problems
        if p.severity == "high" and not (run.regressed and p.type == "regression")
    ]
    reasons = [*run.reasons, *run.notes, *(h for h in high if h not in run.reasons)]
    tone = TONES[run.outcome]
    if run.passed:
        if reasons:
            return Verdict("warn", run.headline, reasons)
        good = []
        if data.gates:
            good.append(f"all {plural(len(data.gates), 'gate')} passed")
        if data.regression is not None:
            regression = data.regression
            good.append(f"{regression.verdict} against baseline {regression.baseline_run_id}")
        others = [p for p in data.problems if p.severity != "high"]
        if others:
            good.append(f"{plural(len(others), 'problem')} of medium or low severity")
        return Verdict(tone, run.headline, good or ["every scored case met its thresholds"])
    return Verdict(tone, run.headline, reasons)
