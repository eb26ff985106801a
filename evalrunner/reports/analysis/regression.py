"""Comparison of a run with its baseline: per-metric deltas with bootstrap intervals, per-case
flips on the primary metrics, and a verdict with the reasons behind it.

Rules:

- **Averages** are over scored results only (every case × iteration whose result for the
  metric has status ``scored``), exactly as result.csv shows them; skipped and errored
  results have no score. ``delta`` = current average − baseline average.
- **Interval**: a percentile bootstrap of ``delta`` at ``confidence`` over *cases*. A case's
  iterations stay together (they are not independent draws). Cases scored in both runs are
  resampled as pairs (the *paired* bootstrap: the case-to-case spread, which both runs share,
  cancels out); cases scored in only one run are resampled within their run (with no case in
  common this is the plain *unpaired* bootstrap of the two samples). Each resample recomputes
  both averages as sum of scores / number of scores over the drawn cases, so at no
  resampling it is exactly ``delta``. Seeded per metric (seed and metric name), so results are
  deterministic and do not depend on which other metrics the runs have.
- **Too few cases**: with fewer than two scored cases in either run there is no spread to
  resample; the interval is None and the change is not significant (a single case cannot show
  a significant change; its flip, below, still counts).
- **significant**: the interval excludes 0. **worse**: significant, in the bad direction for
  the metric (down when higher is better, up when lower is better) and ``|delta| >= min_drop``.
  An improvement is the same in the good direction.
- **Pass state of a case** for a metric (see :func:`case_passes`): over the case's iterations,
  a scored result passes when its ``success`` is true; an errored result (the evaluator
  failed, or the target or the case task failed so nothing was scored) is a failure; skipped
  results are ignored. The case passes when it has at least one scored or errored result and
  none of them failed. A case with only skipped results (or none) has no state and is not
  compared.
- **Flips**: for each primary metric (per the current run) present in both runs and each case
  with a state in both runs: pass → fail is a new failure, fail → pass is fixed.
- **Robustness** (runs with perturbations): each perturbation of both runs is compared case
  by case (:func:`evalrunner.reports.analysis.robustness.compare_robustness`); a case whose verdict
  held in the baseline and no longer holds makes the run a regression.
- **Verdict**: "regression" when a primary metric is worse, any case newly fails, or a
  robustness score dropped (above); else
  "improvement" when some metric improved significantly; else "no significant change".
"""

from __future__ import annotations

import zlib
from collections.abc import Mapping, Sequence

import numpy as np

from evalrunner.reports.analysis.bootstrap import delta_interval
from evalrunner.reports.analysis.robustness import change_text, compare_robustness
from evalrunner.reports.model import (
    CaseFlip,
    MetricDelta,
    MetricInfo,
    Regression,
    ReportData,
    Verdict,
)

#: Interval bounds within this of 0 count as touching 0 (float noise of identical runs).
_EPS = 1e-12
#: How many case ids a reason names before "and N more".
_NAMED_CASES = 10


def compare(
    current: ReportData,
    baseline: ReportData,
    *,
    confidence: float = 0.95,
    resamples: int = 2000,
    seed: int = 0,
    min_drop: float = 0.0,
    baseline_report_prefix: str | None = None,
) -> Regression:
    """Compare ``current`` with ``baseline`` (the same target and suite, an earlier run).

    ``baseline_report_prefix`` is where the baseline's reports are; ReportData does not carry
    its own prefix, so it defaults to ``baseline.config["report_prefix"]`` when present, else "".
    """
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be between 0 and 1 (exclusive), got {confidence}")
    if resamples < 1:
        raise ValueError(f"resamples must be a positive integer, got {resamples}")
    if min_drop < 0:
        raise ValueError(f"min_drop must be 0 or more, got {min_drop}")

    base_metrics = {m.metric: m for m in baseline.metrics}
    common, model_changed = [], []
    for m in current.metrics:
        before = base_metrics.get(m.metric)
        if before is None:
            continue
        if m.model and before.model and m.model != before.model:
            model_changed.append(f"{m.metric} ({before.model} → {m.model})")
        else:
            common.append(m)
    cur_scores, base_scores = case_scores(current), case_scores(baseline)

    deltas: list[MetricDelta] = []
    improved: list[MetricDelta] = []
    for info in common:
        cur = cur_scores.get(info.metric, {})
        base = base_scores.get(info.metric, {})
        cur_avg, base_avg = _average(cur), _average(base)
        delta = None if cur_avg is None or base_avg is None else cur_avg - base_avg
        low = high = None
        if delta is not None:
            rng = np.random.default_rng([seed, zlib.crc32(info.metric.encode())])
            low, high = delta_interval(
                cur, base, confidence=confidence, resamples=resamples, rng=rng
            )
        significant = low is not None and high is not None and (low > _EPS or high < -_EPS)
        bad = delta is not None and (delta < 0 if info.higher_is_better else delta > 0)
        big = delta is not None and abs(delta) >= min_drop
        deltas.append(
            MetricDelta(
                metric=info.metric,
                evaluator=info.evaluator,
                higher_is_better=info.higher_is_better,
                baseline_average=base_avg,
                current_average=cur_avg,
                delta=delta,
                ci_low=low,
                ci_high=high,
                significant=significant,
                worse=significant and bad and big,
            )
        )
        if significant and not bad and big:
            improved.append(deltas[-1])

    new_failures, fixed = _flips(current, baseline, [m for m in common if m.primary])
    # Only primary metrics decide the verdict: with thirty correlated metrics at 95% each,
    # some secondary one drifts "significantly" by chance; they are still reported.
    primary = {m.metric for m in common if m.primary}
    worse = [d for d in deltas if d.worse and d.metric in primary]
    worse_other = [d for d in deltas if d.worse and d.metric not in primary]
    label = f"{confidence * 100:g}% CI"
    reasons: list[str]
    verdict: Verdict
    if worse or new_failures:
        verdict = "regression"
        reasons = [_change_text(d, label) for d in worse]
        if new_failures:
            reasons.append(_flip_text(new_failures, "passed now fail", "passed now fails"))
        reasons += [
            f"also worse (not a primary metric): {_change_text(d, label)}" for d in worse_other
        ]
    elif improved and not worse_other:
        verdict = "improvement"
        reasons = [_change_text(d, label) for d in improved]
        if fixed:
            reasons.append(_flip_text(fixed, "failed now pass", "failed now passes"))
    else:
        verdict = "no significant change"
        if common:
            floor = f", changes under {min_drop:g} ignored" if min_drop else ""
            reasons = [f"no metric changed significantly ({len(common)} compared, {label}{floor})"]
        else:
            reasons = ["the runs have no metric in common"]
        if fixed:
            reasons.append(_flip_text(fixed, "failed now pass", "failed now passes"))
        reasons += [f"worse (not a primary metric): {_change_text(d, label)}" for d in worse_other]

    # Robustness scores are compared like metrics: a case whose verdict held under a
    # perturbation in the baseline and no longer does is a regression.
    robustness = compare_robustness(current.robustness, baseline.robustness)
    fragile = [c for c in robustness if c.worse]
    if fragile:
        verdict = "regression"
        reasons = [*reasons, *(change_text(c) for c in fragile)]

    if model_changed:  # different models score on different scales: no verdict from them
        reasons.append(f"not compared, scored with another model: {'; '.join(model_changed)}")

    prefix = baseline_report_prefix
    if prefix is None:
        prefix = baseline.report_prefix or str(baseline.config.get("report_prefix") or "")
    return Regression(
        baseline_run_id=baseline.run_id,
        baseline_started_at=baseline.started_at,
        baseline_report_prefix=prefix,
        verdict=verdict,
        reasons=reasons,
        deltas=deltas,
        new_failures=new_failures,
        fixed=fixed,
        robustness=robustness,
    )


def case_scores(data: ReportData) -> dict[str, dict[str, list[float]]]:
    """metric -> case_id -> scores of its scored iterations, cases in the run's row order."""
    out: dict[str, dict[str, list[float]]] = {}
    for row in data.rows:
        for r in row.results:
            if r.status == "scored" and r.score is not None:
                out.setdefault(r.metric, {}).setdefault(row.case_id, []).append(float(r.score))
    return out


def case_passes(data: ReportData, metric: str) -> dict[str, bool]:
    """case_id -> whether the case passes ``metric`` over all its iterations.

    Scored results pass when ``success`` is true; errored results are failures; skipped ones
    are ignored. Cases with no scored or errored result are absent (not compared).
    """
    out: dict[str, bool] = {}
    for row in data.rows:
        r = row.result(metric)
        if r is None or r.status == "skipped":
            continue
        ok = r.status == "scored" and r.success is True
        out[row.case_id] = out.get(row.case_id, True) and ok
    return out


def _average(cases: Mapping[str, Sequence[float]]) -> float | None:
    values = [v for scores in cases.values() for v in scores]
    return float(np.mean(values)) if values else None


def _flips(
    current: ReportData, baseline: ReportData, primary: Sequence[MetricInfo]
) -> tuple[list[CaseFlip], list[CaseFlip]]:
    """New failures and fixed cases, in the current run's case order, then metric order."""
    order = list(dict.fromkeys(row.case_id for row in current.rows))
    states = {
        m.metric: (case_passes(baseline, m.metric), case_passes(current, m.metric)) for m in primary
    }
    new_failures: list[CaseFlip] = []
    fixed: list[CaseFlip] = []
    for case_id in order:
        for info in primary:
            before_all, after_all = states[info.metric]
            before, after = before_all.get(case_id), after_all.get(case_id)
            if before is None or after is None or before == after:
                continue
            flip = CaseFlip(case_id=case_id, metric=info.metric, before=before, after=after)
            (new_failures if before else fixed).append(flip)
    return new_failures, fixed


def _num(x: float) -> str:
    ax = abs(x)
    text = f"{x:.2f}" if ax >= 0.1 or ax == 0 else f"{x:.3f}" if ax >= 0.001 else f"{x:.2g}"
    return text.replace("-", "−")


def _change_text(d: MetricDelta, label: str) -> str:
    assert d.delta is not None and d.ci_low is not None and d.ci_high is not None
    moved = "fell" if d.delta < 0 else "rose"
    direction = "" if d.higher_is_better else "; lower is better"
    return (
        f"{d.metric} {moved} by {_num(abs(d.delta))} "
        f"({label} {_num(d.ci_low)} to {_num(d.ci_high)}{direction})"
    )


def _flip_text(flips: Sequence[CaseFlip], plural: str, singular: str) -> str:
    by_case: dict[str, list[str]] = {}
    for f in flips:
        by_case.setdefault(f.case_id, []).append(f.metric)
    named = [f"{case} ({', '.join(metrics)})" for case, metrics in by_case.items()]
    more = len(named) - _NAMED_CASES
    listed = ", ".join(named[:_NAMED_CASES]) + (f", and {more} more" if more > 0 else "")
    n = len(by_case)
    return f"{n} case{'s' if n != 1 else ''} that {plural if n != 1 else singular}: {listed}"
