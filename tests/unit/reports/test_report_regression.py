"""Comparison with a baseline: bootstrap intervals, flips and the verdict."""

from __future__ import annotations

import re

import numpy as np
import pytest

from evalrunner.evaluators.base import MetricResult
from evalrunner.reports.analysis.regression import case_passes, compare, delta_interval
from evalrunner.reports.model import CaseRow, MetricInfo, ReportData

ROUGE = MetricInfo(
    metric="ROUGE-L", evaluator="Rouge Metric", primary=True, threshold=0.1, higher_is_better=True
)
TOX = MetricInfo(
    metric="Toxicity", evaluator="Toxicity", primary=True, threshold=0.9, higher_is_better=False
)


def result(info: MetricInfo, score: float | None, status: str = "scored") -> MetricResult:
    success = None
    if status == "scored" and score is not None:
        success = score >= info.threshold if info.higher_is_better else score <= info.threshold
    return MetricResult(
        evaluator=info.evaluator,
        metric=info.metric,
        status=status,
        score=score if status == "scored" else None,
        success=success,
        threshold=info.threshold,
        reason=f"{status} {score}",
    )


def run(
    scores: dict[str, list[float]],
    info: MetricInfo = ROUGE,
    run_id: str = "cur",
    extra: list[MetricInfo] | None = None,
    config: dict | None = None,
) -> ReportData:
    """A run of one metric: case_id -> its score per iteration."""
    rows = [
        CaseRow(
            case_id=case_id,
            iteration=i + 1,
            question=f"q {case_id}",
            status="ok",
            results=[result(info, s)],
        )
        for case_id, values in scores.items()
        for i, s in enumerate(values)
    ]
    return ReportData(
        run_id=run_id,
        target="t",
        target_kind="lambdaArn",
        suite="test-suites/s.csv",
        started_at=f"2026-11-2{1 if run_id == 'base' else 2}T10:00:00+00:00",
        finished_at="2026-11-22T10:05:00+00:00",
        iterations=max(len(v) for v in scores.values()),
        config=config or {},
        metrics=[info, *(extra or [])],
        stats=[],
        rows=rows,
    )


def spread_cases(n: int = 20, seed: int = 1) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {f"c{i:02d}": rng.uniform(0.4, 0.9, size=2) for i in range(n)}


def test_same_seed_same_interval_and_other_seed_another():
    base_scores = spread_cases()
    noise = np.random.default_rng(7)
    cur_scores = {k: v - 0.05 + noise.normal(0, 0.05, size=2) for k, v in base_scores.items()}
    base = run({k: list(v) for k, v in base_scores.items()}, run_id="base")
    cur = run({k: list(v) for k, v in cur_scores.items()})
    a = compare(cur, base, seed=3).deltas[0]
    b = compare(cur, base, seed=3).deltas[0]
    c = compare(cur, base, seed=4).deltas[0]
    assert (a.ci_low, a.ci_high) == (b.ci_low, b.ci_high)
    assert (a.ci_low, a.ci_high) != (c.ci_low, c.ci_high)
    assert a.ci_low is not None and a.ci_high is not None and a.delta is not None
    assert a.ci_low < a.delta < a.ci_high


def test_clear_drop_is_worse_and_a_regression_with_its_reason():
    base_scores = spread_cases()
    noise = np.random.default_rng(2)
    cur_scores = {k: v - 0.2 + noise.normal(0, 0.03, size=2) for k, v in base_scores.items()}
    base = run({k: list(v) for k, v in base_scores.items()}, run_id="base")
    cur = run({k: list(v) for k, v in cur_scores.items()})
    reg = compare(cur, base)
    (d,) = reg.deltas
    assert d.delta == pytest.approx(
        np.mean(list(cur_scores.values())) - np.mean(list(base_scores.values()))
    )
    assert d.significant and d.worse
    assert d.ci_high is not None and d.ci_high < 0
    assert reg.verdict == "regression"
    assert reg.new_failures == []  # threshold 0.1: every case still passes
    assert len(reg.reasons) == 1
    assert re.fullmatch(r"ROUGE-L fell by 0\.\d\d \(95% CI −0\.\d\d to −0\.\d\d\)", reg.reasons[0])
    assert f"fell by {abs(d.delta):.2f}" in reg.reasons[0]


def test_tiny_noisy_change_is_not_significant():
    base_scores = spread_cases()
    # Each case moves by 0.1 up or down (half each way), plus 0.005 overall.
    cur_scores = {
        k: v + 0.005 + (0.1 if i % 2 else -0.1) for i, (k, v) in enumerate(base_scores.items())
    }
    base = run({k: list(v) for k, v in base_scores.items()}, run_id="base")
    cur = run({k: list(v) for k, v in cur_scores.items()})
    reg = compare(cur, base)
    (d,) = reg.deltas
    assert d.delta == pytest.approx(0.005)
    assert d.ci_low is not None and d.ci_high is not None
    assert d.ci_low < 0 < d.ci_high
    assert not d.significant and not d.worse
    assert reg.verdict == "no significant change"


def test_paired_bootstrap_sees_a_shift_the_unpaired_one_cannot():
    # Cases differ a lot from each other; each case moves up by the same 0.05.
    base_scores = {f"c{i}": [0.1 + 0.04 * i] for i in range(20)}
    cur_scores = {k: [v[0] + 0.05] for k, v in base_scores.items()}
    paired = compare(run(cur_scores), run(base_scores, run_id="base")).deltas[0]
    assert paired.significant and paired.delta == pytest.approx(0.05)
    assert paired.ci_low == pytest.approx(0.05) and paired.ci_high == pytest.approx(0.05)

    # Same scores, but no case id matches: only the two samples can be compared.
    renamed = {f"x{k}": v for k, v in cur_scores.items()}
    unpaired = compare(run(renamed), run(base_scores, run_id="base")).deltas[0]
    assert unpaired.delta == pytest.approx(0.05)
    assert unpaired.ci_low is not None and unpaired.ci_high is not None
    assert unpaired.ci_low < 0 < unpaired.ci_high
    assert not unpaired.significant


def test_delta_interval_keeps_iterations_of_a_case_together():
    # Two iterations per case that agree: resampling cases, not results, so the interval of
    # a per-case constant shift stays degenerate.
    base = {f"c{i}": [0.1 * i, 0.1 * i] for i in range(8)}
    cur = {k: [v[0] - 0.1, v[1] - 0.1] for k, v in base.items()}
    low, high = delta_interval(cur, base, rng=np.random.default_rng(0))
    assert low == pytest.approx(-0.1) and high == pytest.approx(-0.1)
    assert delta_interval({"a": [1.0]}, base) == (None, None)


def test_lower_is_better_metric_rising_is_worse_and_falling_is_an_improvement():
    base_scores = {f"c{i}": [0.1 + 0.01 * i] for i in range(15)}
    up = {k: [v[0] + 0.2] for k, v in base_scores.items()}
    down = {k: [v[0] - 0.05] for k, v in base_scores.items()}
    base = run(base_scores, TOX, run_id="base")

    worse = compare(run(up, TOX), base)
    assert worse.deltas[0].worse and worse.verdict == "regression"
    assert worse.reasons[0].startswith("Toxicity rose by 0.20 (95% CI 0.20 to 0.20")
    assert worse.reasons[0].endswith("; lower is better)")

    better = compare(run(down, TOX), base)
    assert better.deltas[0].significant and not better.deltas[0].worse
    assert better.verdict == "improvement"
    assert better.reasons[0].startswith("Toxicity fell by 0.050")


def test_improvement_verdict_names_the_metric_and_fixed_cases():
    base_scores = {f"c{i}": [0.05 + 0.02 * i] for i in range(10)}  # c0..c2 fail (< 0.1)
    cur_scores = {k: [v[0] + 0.1] for k, v in base_scores.items()}
    reg = compare(run(cur_scores), run(base_scores, run_id="base"))
    assert reg.verdict == "improvement"
    assert reg.reasons[0].startswith("ROUGE-L rose by 0.10")
    assert [f.case_id for f in reg.fixed] == ["c0", "c1", "c2"]
    assert (
        reg.reasons[1] == "3 cases that failed now pass: c0 (ROUGE-L), c1 (ROUGE-L), c2 (ROUGE-L)"
    )
    assert reg.new_failures == []


def test_min_drop_ignores_small_significant_changes():
    base_scores = {f"c{i}": [0.5 + 0.02 * i] for i in range(10)}
    cur_scores = {k: [v[0] - 0.02] for k, v in base_scores.items()}
    cur, base = run(cur_scores), run(base_scores, run_id="base")
    assert compare(cur, base).deltas[0].worse
    small = compare(cur, base, min_drop=0.05)
    assert small.deltas[0].significant and not small.deltas[0].worse
    assert small.verdict == "no significant change"


def test_single_case_has_no_interval_and_no_scores_no_delta():
    one = compare(run({"a": [0.2]}), run({"a": [0.9]}, run_id="base"))
    d = one.deltas[0]
    assert d.delta == pytest.approx(-0.7)
    assert d.ci_low is None and d.ci_high is None and not d.significant and not d.worse
    assert one.verdict == "no significant change"

    base = run({"a": [0.5], "b": [0.6]}, run_id="base")
    cur = run({"a": [0.5], "b": [0.6]})
    for row in cur.rows:
        row.results = [result(ROUGE, None, status="skipped")]
    d = compare(cur, base).deltas[0]
    assert d.current_average is None and d.delta is None and not d.significant


def test_metric_in_one_run_only_is_left_out():
    base = run({"a": [0.5], "b": [0.6]}, run_id="base")
    cur = run({"a": [0.5], "b": [0.6]}, extra=[TOX])
    assert [d.metric for d in compare(cur, base).deltas] == ["ROUGE-L"]


def test_flips_pass_to_fail_fail_to_pass_errors_and_skips():
    info = MetricInfo(
        metric="ROUGE-L",
        evaluator="Rouge Metric",
        primary=True,
        threshold=0.5,
        higher_is_better=True,
    )
    other = MetricInfo(
        metric="ROUGE-1",
        evaluator="Rouge Metric",
        primary=False,
        threshold=0.5,
        higher_is_better=True,
    )
    base = run(
        {"a": [0.9, 0.8], "b": [0.2, 0.9], "c": [0.9, 0.9], "d": [0.9, 0.9], "e": [0.7, 0.7]},
        info,
        run_id="base",
    )
    cur = run(
        {"a": [0.9, 0.3], "b": [0.8, 0.9], "c": [0.9, 0.9], "d": [0.1, 0.1], "e": [0.7, 0.7]},
        info,
    )
    by_case = {}
    for row in cur.rows:
        by_case.setdefault(row.case_id, []).append(row)
    by_case["c"][1].results = [result(info, None, status="error")]  # the evaluator failed
    for row in by_case["d"]:  # nothing scored this time: not compared
        row.results = [result(info, None, status="skipped")]
    # A non-primary metric that flips is not a case flip.
    for row in cur.rows:
        row.results.append(result(other, 0.0))
    for row in base.rows:
        row.results.append(result(other, 1.0))
    cur.metrics.append(other)
    base.metrics.append(other)

    assert case_passes(cur, "ROUGE-L") == {"a": False, "b": True, "c": False, "e": True}
    reg = compare(cur, base)
    assert [(f.case_id, f.metric, f.before, f.after) for f in reg.new_failures] == [
        ("a", "ROUGE-L", True, False),
        ("c", "ROUGE-L", True, False),
    ]
    assert [(f.case_id, f.before, f.after) for f in reg.fixed] == [("b", False, True)]
    assert reg.verdict == "regression"
    assert "2 cases that passed now fail: a (ROUGE-L), c (ROUGE-L)" in reg.reasons
    assert reg.reasons[-1].startswith("also worse (not a primary metric): ROUGE-1 fell by 1.00")


def test_a_drop_in_a_secondary_metric_alone_is_reported_but_not_a_regression():
    primary = MetricInfo(
        metric="ROUGE-L",
        evaluator="Rouge Metric",
        primary=True,
        threshold=0.5,
        higher_is_better=True,
    )
    other = MetricInfo(
        metric="ROUGE-1",
        evaluator="Rouge Metric",
        primary=False,
        threshold=0.5,
        higher_is_better=True,
    )
    scores = {c: [0.8] for c in "abcdef"}
    base, cur = run(scores, primary, run_id="base"), run(scores, primary)
    for row in base.rows:
        row.results.append(result(other, 0.9))
    for row in cur.rows:
        row.results.append(result(other, 0.2))
    cur.metrics.append(other)
    base.metrics.append(other)
    reg = compare(cur, base)
    assert reg.verdict == "no significant change"
    assert any(r.startswith("worse (not a primary metric): ROUGE-1") for r in reg.reasons)
    assert next(d for d in reg.deltas if d.metric == "ROUGE-1").worse


def test_one_new_failure_alone_makes_a_regression():
    info = ROUGE.model_copy(update={"threshold": 0.5})
    base = run({"a": [0.6], "b": [0.7], "c": [0.8]}, info, run_id="base")
    cur = run({"a": [0.4], "b": [0.7], "c": [0.8]}, info)
    reg = compare(cur, base)
    assert not reg.deltas[0].significant
    assert reg.verdict == "regression"
    assert reg.reasons == ["1 case that passed now fails: a (ROUGE-L)"]


def test_baseline_identity_and_prefix():
    base = run({"a": [0.6], "b": [0.7]}, run_id="base", config={"report_prefix": "p/base-"})
    cur = run({"a": [0.6], "b": [0.7]})
    reg = compare(cur, base)
    assert reg.baseline_run_id == "base"
    assert reg.baseline_started_at == base.started_at
    assert reg.baseline_report_prefix == "p/base-"
    assert compare(cur, base, baseline_report_prefix="x/").baseline_report_prefix == "x/"
    assert reg.verdict == "no significant change" and not reg.deltas[0].significant


def test_bad_arguments_are_refused():
    base = run({"a": [0.6], "b": [0.7]}, run_id="base")
    with pytest.raises(ValueError, match="confidence"):
        compare(base, base, confidence=95)
    with pytest.raises(ValueError, match="resamples"):
        compare(base, base, resamples=0)


def test_a_metric_scored_with_another_model_is_not_compared():
    minilm = ROUGE.model_copy(
        update={"metric": "Groundedness", "evaluator": "Groundedness", "model": "all-MiniLM-L6-v2"}
    )
    bge = minilm.model_copy(update={"model": "BAAI/bge-small-en-v1.5"})
    base = run({f"c{i}": [0.9] for i in range(30)}, info=minilm, run_id="base")
    cur = run({f"c{i}": [0.3] for i in range(30)}, info=bge)
    reg = compare(cur, base)
    assert reg.verdict == "no significant change" and reg.deltas == []
    assert any(
        "not compared, scored with another model: Groundedness (all-MiniLM-L6-v2 → "
        "BAAI/bge-small-en-v1.5)" in r
        for r in reg.reasons
    )
    same = compare(run({f"c{i}": [0.3] for i in range(30)}, info=minilm), base)
    assert same.verdict == "regression"  # same model: the drop counts
