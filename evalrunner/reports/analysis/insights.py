"""Insights of one run: what is worth knowing (weakest metric, most difficult case, slowest
and fastest, costliest, best and worst iteration, most common failure reason), derived from
its :class:`ReportData` alone."""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Callable, Sequence

from evalrunner.reports.analysis._common import (
    _clip,
    _failing_cases,
    _names,
    _primary,
    normalize_reason,
)
from evalrunner.reports.model import CaseRow, Insight, ReportData

#: Iterations differ noticeably when their mean primary pass rates are this far apart.
ITERATION_SPREAD = 0.10


def find_insights(data: ReportData) -> list[Insight]:
    """What is worth knowing about the run, in a fixed order of types."""
    out: list[Insight] = []
    out += _weakest_metric(data)
    out += _most_difficult_case(data)
    out += _latency(data)
    out += _costliest(data)
    out += _iterations(data)
    out += _failure_reasons(data)
    return out


def _weakest_metric(data: ReportData) -> list[Insight]:
    stats = {s.metric: s for s in data.run_stats()}
    rated = [
        stats[m.metric]
        for m in _primary(data)
        if m.metric in stats and stats[m.metric].pass_rate is not None
    ]
    if len(rated) < 2:  # "weakest" of one metric says nothing
        return []
    weakest = min(rated, key=lambda s: s.pass_rate if s.pass_rate is not None else 1.0)
    assert weakest.pass_rate is not None
    failing = _failing_cases(data, weakest.metric)
    return [
        Insight(
            type="weakest_metric",
            metric=weakest.metric,
            value=weakest.pass_rate,
            description=(
                f"Weakest metric: {weakest.metric}, passed by {weakest.pass_rate:.0%} of "
                f"answers (the lowest pass rate of the {len(rated)} primary metrics)."
            ),
            affected_cases=failing,
            suggested_action=f"start with the cases failing {weakest.metric}: {_names(failing)}",
        )
    ]


def _most_difficult_case(data: ReportData) -> list[Insight]:
    primary = {m.metric for m in _primary(data)}
    failed: Counter[str] = Counter()
    judged: Counter[str] = Counter()
    per_metric: dict[str, Counter[str]] = {}
    for row in data.rows:
        for res in row.results:
            if res.metric not in primary or res.status != "scored":
                continue
            judged[row.case_id] += 1
            if not res.success:
                failed[row.case_id] += 1
                per_metric.setdefault(row.case_id, Counter())[res.metric] += 1
    if not failed:
        return []
    order = {c: i for i, c in enumerate(dict.fromkeys(r.case_id for r in data.rows))}
    case = min(failed, key=lambda c: (-failed[c], -failed[c] / judged[c], order[c]))
    detail = ", ".join(f"{m} {n}×" for m, n in per_metric[case].items())
    return [
        Insight(
            type="most_difficult_case",
            description=(
                f"Most difficult case: {case}, failed {failed[case]} of {judged[case]} "
                f"checks (iterations × primary metrics): {detail}. Question: "
                f"{_clip(_question(data, case), 120)}"
            ),
            affected_cases=[case],
            value=float(failed[case]),
            suggested_action=f"check {case}'s expected answer and the target's answers to it",
        )
    ]


def _latency(data: ReportData) -> list[Insight]:
    per_case = _per_case(data.rows, lambda r: r.latency_ms)
    if len(per_case) < 2:
        return []
    means = {c: statistics.fmean(v) for c, v in per_case.items()}
    slowest = max(means, key=lambda c: means[c])  # first on ties
    fastest = min(means, key=lambda c: means[c])
    return [
        Insight(
            type="slowest",
            description=(
                f"Slowest case: {slowest}, {_ms(means[slowest])}{_over(len(per_case[slowest]))}."
            ),
            affected_cases=[slowest],
            value=means[slowest],
        ),
        Insight(
            type="fastest",
            description=(
                f"Fastest case: {fastest}, {_ms(means[fastest])}{_over(len(per_case[fastest]))}."
            ),
            affected_cases=[fastest],
            value=means[fastest],
        ),
    ]


def _costliest(data: ReportData) -> list[Insight]:
    costs = _per_case(data.rows, lambda r: r.cost)
    if costs:
        what, per_case = "cost", costs
    else:
        what = "tokens"
        per_case = _per_case(data.rows, _tokens)
    if not per_case:
        return []
    means = {c: statistics.fmean(v) for c, v in per_case.items()}
    case = max(means, key=lambda c: means[c])
    shown = f"{means[case]:.4g}" if what == "cost" else f"{means[case]:,.0f} tokens"
    return [
        Insight(
            type="costliest",
            description=f"Costliest case by {what}: {case}, {shown}{_over(len(per_case[case]))}.",
            affected_cases=[case],
            value=means[case],
        )
    ]


def _iterations(data: ReportData) -> list[Insight]:
    if data.iterations < 2:
        return []
    primary = {m.metric for m in _primary(data)}
    rates: dict[int, list[float]] = {}
    for s in data.stats:
        if s.iteration is not None and s.metric in primary and s.pass_rate is not None:
            rates.setdefault(s.iteration, []).append(s.pass_rate)
    if len(rates) < 2:
        return []
    means = {i: statistics.fmean(v) for i, v in sorted(rates.items())}
    best = max(means, key=lambda i: means[i])
    worst = min(means, key=lambda i: means[i])
    if means[best] - means[worst] < ITERATION_SPREAD:
        return []
    return [
        Insight(
            type="best_iteration",
            description=(
                f"Best iteration: {best}, mean primary pass rate {means[best]:.0%} "
                f"(worst: iteration {worst}, {means[worst]:.0%})."
            ),
            value=means[best],
        ),
        Insight(
            type="worst_iteration",
            description=(
                f"Worst iteration: {worst}, mean primary pass rate {means[worst]:.0%} "
                f"(best: iteration {best}, {means[best]:.0%}); the target is not repeatable."
            ),
            value=means[worst],
            suggested_action="make the target deterministic (temperature 0) where you can",
        ),
    ]


def _failure_reasons(data: ReportData) -> list[Insight]:
    out = []
    for info in _primary(data):
        reasons: list[str] = []
        cases: dict[str, list[str]] = {}
        examples: dict[str, str] = {}  # each key's first reason, in row order
        for row in data.rows:
            res = row.result(info.metric)
            if res is not None and res.status == "scored" and not res.success:
                key = normalize_reason(res.reason)
                reasons.append(key)
                cases.setdefault(key, []).append(row.case_id)
                examples.setdefault(key, res.reason)
        if not reasons:
            continue
        key, count = Counter(reasons).most_common(1)[0]  # first seen on ties
        if count < 2:
            continue
        example = examples[key]
        out.append(
            Insight(
                type="common_failure_reason",
                metric=info.metric,
                value=count / len(reasons),
                description=(
                    f"Most common failure of {info.metric} ({count} of {len(reasons)} "
                    f"failures): {_clip(example)}"
                ),
                affected_cases=list(dict.fromkeys(cases[key])),
            )
        )
    return out


# --------------------------------------------------------------------------------- helpers


def _per_case(
    rows: Sequence[CaseRow], value: Callable[[CaseRow], float | None]
) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {}
    for row in rows:
        v = value(row)
        if v is not None:
            out.setdefault(row.case_id, []).append(float(v))
    return out


def _tokens(row: CaseRow) -> int | None:
    if row.input_tokens is None and row.output_tokens is None:
        return None
    return (row.input_tokens or 0) + (row.output_tokens or 0)


def _question(data: ReportData, case_id: str) -> str:
    return next((r.question for r in data.rows if r.case_id == case_id), "")


def _ms(value: float) -> str:
    return f"{value:,.0f} ms"


def _over(n: int) -> str:
    return f" on average over {n} iterations" if n > 1 else ""
