"""One suite against several targets: a row per target, the best target per metric, and the
cases the targets find hardest.

Rules:

- Every run must be of the same suite (``ReportData.suite``) and name a different target;
  otherwise ValueError.
- Metrics: the union of the runs' metrics by name, in first-seen order (direction and
  primary flag from the first run that has the metric). An entry's averages and pass rates
  come from its run statistics (iteration None); a metric the run lacks is None.
- Latency median and p95 (linear interpolation) over every row with a latency; tokens and cost
  are totals over rows that report them (None when no row does); ``errors`` counts rows whose
  target call or case task failed.
- Best target per metric: highest average when higher is better, lowest when lower is better;
  ties go to the first run given. Metrics no run has an average for are left out.
- Fastest / slowest: by median latency. Cheapest / costliest: by cost per row when any run
  reports cost, else by tokens per row (per row, so runs with different iteration counts
  compare fairly); ties go to the first run.
- Difficult cases, matched by case_id: a target's pass share on a case is passed / judged over
  its iterations × the run's primary metrics, where a scored result passes on success, an
  errored one fails and a skipped one is not judged. The case is failed by a target when its
  share is below 1 (the flip rule of :mod:`evalrunner.reports.analysis.regression`). Only cases
  failed by at least one target are listed, most difficult first: failed by more targets, then lower
  mean pass share, then suite order.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from evalrunner.reports.model import (
    DifficultCase,
    Leaderboard,
    LeaderboardEntry,
    MetricInfo,
    ReportData,
)


def build_leaderboard(
    runs: list[ReportData],
    *,
    created_at: str,
    report_prefixes: Sequence[str] | None = None,
) -> Leaderboard:
    """Compare ``runs`` (one per target, same suite).

    ``report_prefixes`` gives each run's report prefix in the same order; ReportData does not
    carry its own, so by default it is ``run.config["report_prefix"]`` when present, else "".
    """
    if not runs:
        raise ValueError("a leaderboard needs at least one run")
    suites = list(dict.fromkeys(r.suite for r in runs))
    if len(suites) > 1:
        listed = "; ".join(f"{r.target} (run {r.run_id}): {r.suite}" for r in runs)
        raise ValueError(
            f"a leaderboard compares targets on one suite, but these runs are of "
            f"{len(suites)} suites: {listed}"
        )
    targets = [r.target for r in runs]
    twice = sorted({t for t in targets if targets.count(t) > 1})
    if twice:
        raise ValueError(
            f"each target may appear once in a leaderboard; more than one run of: "
            f"{', '.join(twice)} (compare runs of one target with the regression check)"
        )
    if report_prefixes is not None and len(report_prefixes) != len(runs):
        raise ValueError(f"report_prefixes has {len(report_prefixes)} items for {len(runs)} runs")

    metrics: dict[str, MetricInfo] = {}
    for run in runs:
        for m in run.metrics:
            metrics.setdefault(m.metric, m)

    entries = [
        _entry(
            run,
            list(metrics),
            report_prefixes[i]
            if report_prefixes is not None
            else str(run.config.get("report_prefix") or ""),
        )
        for i, run in enumerate(runs)
    ]

    best: dict[str, str] = {}
    for name, info in metrics.items():
        values = [(e.averages[name], e.target) for e in entries]
        scored = [(v, t) for v, t in values if v is not None]
        if scored:
            sign = -1.0 if info.higher_is_better else 1.0
            best[name] = min(scored, key=lambda vt: sign * vt[0])[1]

    by_latency = [
        (e.latency_median_ms, e.target) for e in entries if e.latency_median_ms is not None
    ]
    per_row = _cost_per_row(runs)
    return Leaderboard(
        suite=suites[0],
        created_at=created_at,
        metrics=list(metrics.values()),
        entries=entries,
        best_per_metric=best,
        difficult_cases=_difficult_cases(runs),
        fastest=min(by_latency, key=lambda v: v[0])[1] if by_latency else None,
        slowest=max(by_latency, key=lambda v: v[0])[1] if by_latency else None,
        cheapest=min(per_row, key=lambda v: v[0])[1] if per_row else None,
        costliest=max(per_row, key=lambda v: v[0])[1] if per_row else None,
    )


def _entry(run: ReportData, metrics: list[str], prefix: str) -> LeaderboardEntry:
    stats = {s.metric: s for s in run.run_stats()}
    latencies = [r.latency_ms for r in run.rows if r.latency_ms is not None]
    tokens = [
        (r.input_tokens or 0) + (r.output_tokens or 0)
        for r in run.rows
        if r.input_tokens is not None or r.output_tokens is not None
    ]
    costs = [r.cost for r in run.rows if r.cost is not None]
    primary = [m.metric for m in run.metrics if m.primary]
    rates = [p for m in primary if m in stats and (p := stats[m].pass_rate) is not None]
    return LeaderboardEntry(
        target=run.target,
        run_id=run.run_id,
        report_prefix=prefix,
        averages={m: stats[m].average if m in stats else None for m in metrics},
        pass_rates={m: stats[m].pass_rate if m in stats else None for m in metrics},
        pass_rate=sum(rates) / len(rates) if rates else None,
        gates_passed=all(g.passed for g in run.gates) if run.gates else None,
        verdict=run.verdict.headline,
        latency_median_ms=float(np.median(latencies)) if latencies else None,
        latency_p95_ms=float(np.percentile(latencies, 95)) if latencies else None,
        total_tokens=sum(tokens) if tokens else None,
        total_cost=float(sum(costs)) if costs else None,
        errors=sum(1 for r in run.rows if r.status != "ok"),
    )


def _cost_per_row(runs: Sequence[ReportData]) -> list[tuple[float, str]]:
    """(mean cost per row, target) for runs reporting cost; else the same for tokens."""
    costs = []
    for run in runs:
        values = [r.cost for r in run.rows if r.cost is not None]
        if values:
            costs.append((float(np.mean(values)), run.target))
    if costs:
        return costs
    tokens = []
    for run in runs:
        values = [
            (r.input_tokens or 0) + (r.output_tokens or 0)
            for r in run.rows
            if r.input_tokens is not None or r.output_tokens is not None
        ]
        if values:
            tokens.append((float(np.mean(values)), run.target))
    return tokens


def _difficult_cases(runs: Sequence[ReportData]) -> list[DifficultCase]:
    order: dict[str, int] = {}
    questions: dict[str, str] = {}
    shares: dict[str, dict[str, float]] = {}
    for run in runs:
        primary = {m.metric for m in run.metrics if m.primary}
        passed: dict[str, int] = {}
        judged: dict[str, int] = {}
        for row in run.rows:
            order.setdefault(row.case_id, len(order))
            questions.setdefault(row.case_id, row.question)
            for res in row.results:
                if res.metric not in primary or res.status == "skipped":
                    continue
                judged[row.case_id] = judged.get(row.case_id, 0) + 1
                ok = res.status == "scored" and res.success is True
                passed[row.case_id] = passed.get(row.case_id, 0) + int(ok)
        for case_id, n in judged.items():
            shares.setdefault(case_id, {})[run.target] = passed[case_id] / n
    out = [
        DifficultCase(
            case_id=case_id,
            question=questions[case_id],
            failed_by=[t for t, share in per_target.items() if share < 1.0],
            pass_share=per_target,
        )
        for case_id, per_target in shares.items()
    ]
    out = [c for c in out if c.failed_by]
    out.sort(
        key=lambda c: (
            -len(c.failed_by),
            sum(c.pass_share.values()) / len(c.pass_share),
            order[c.case_id],
        )
    )
    return out
