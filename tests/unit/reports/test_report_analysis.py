"""Problems and insights of one run."""

from __future__ import annotations

from typing import Any

import pytest

from evalrunner.evaluators.base import MetricResult
from evalrunner.reports.analysis._common import normalize_reason
from evalrunner.reports.analysis.insights import find_insights
from evalrunner.reports.analysis.problems import find_problems
from evalrunner.reports.model import (
    CaseFlip,
    CaseRow,
    MetricDelta,
    MetricInfo,
    MetricStats,
    Regression,
    ReportData,
)

ROUGE = MetricInfo(
    metric="ROUGE-L", evaluator="Rouge Metric", primary=True, threshold=0.75, higher_is_better=True
)
R1 = MetricInfo(
    metric="ROUGE-1", evaluator="Rouge Metric", primary=False, threshold=0.75, higher_is_better=True
)
TOX = MetricInfo(
    metric="Toxicity", evaluator="Toxicity", primary=True, threshold=0.5, higher_is_better=False
)
CTX = MetricInfo(
    metric="Contextual Recall",
    evaluator="Contextual Recall",
    primary=True,
    threshold=0.5,
    higher_is_better=True,
)


def res(
    info: MetricInfo,
    score: float | None = None,
    *,
    status: str = "scored",
    reason: str | None = None,
) -> MetricResult:
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
        reason=reason or f"{info.metric} {score}",
    )


def row(case_id: str, *results: MetricResult, iteration: int = 1, **kw: Any) -> CaseRow:
    kw.setdefault("contexts", ["chunk"])
    return CaseRow(
        case_id=case_id,
        iteration=iteration,
        question=f"question {case_id}?",
        status=kw.pop("status", "ok"),
        results=list(results),
        **kw,
    )


def stat(info: MetricInfo, average: float | None, pass_rate: float | None, **kw: Any):
    return MetricStats(
        metric=info.metric,
        evaluator=info.evaluator,
        primary=info.primary,
        threshold=info.threshold,
        higher_is_better=info.higher_is_better,
        average=average,
        pass_rate=pass_rate,
        count=kw.pop("count", 10),
        **kw,
    )


def report(
    rows: list[CaseRow],
    metrics: list[MetricInfo] | None = None,
    stats: list[MetricStats] | None = None,
    **kw: Any,
) -> ReportData:
    return ReportData(
        run_id="r1",
        target="t",
        target_kind="lambdaArn",
        suite="test-suites/s.csv",
        started_at="2026-11-22T10:00:00+00:00",
        finished_at="2026-11-22T10:05:00+00:00",
        iterations=kw.pop("iterations", 1),
        config=kw.pop("config", {}),
        metrics=metrics if metrics is not None else [ROUGE],
        stats=stats or [],
        rows=rows,
        **kw,
    )


def of_type(problems, kind: str):
    return [p for p in problems if p.type == kind]


# ------------------------------------------------------------------------- below threshold


@pytest.mark.parametrize(
    ("average", "pass_rate", "severity"),
    [
        (0.45, 0.6, "high"),  # misses by 0.30 > 0.25 of the range
        (0.50, 0.6, "medium"),  # exactly 0.25: not more than 0.25
        (0.60, 0.6, "medium"),  # 0.15
        (0.66, 0.6, "low"),  # 0.09
        (0.70, 0.8, "low"),
        (0.74, 0.4, "high"),  # barely misses, but fewer than half pass
        (0.75, 0.4, None),  # at the threshold: passes
        (0.90, 0.9, None),
    ],
)
def test_below_threshold_severity_by_distance(average, pass_rate, severity):
    failing = [row("a", res(ROUGE, 0.2)), row("b", res(ROUGE, 0.9)), row("c", res(ROUGE, 0.1))]
    data = report(failing, stats=[stat(ROUGE, average, pass_rate)])
    found = of_type(find_problems(data), "below_threshold")
    if severity is None:
        assert found == []
        return
    (p,) = found
    assert p.severity == severity and p.metric == "ROUGE-L"
    assert p.affected_cases == ["a", "c"]
    assert f"{average:.3f}" in p.description and "below its threshold 0.75" in p.description
    assert "details.csv" in p.suggested_action and "a, c" in p.suggested_action
    assert 'thresholds["ROUGE-L"]' in p.suggested_action


def test_below_threshold_respects_lower_is_better_and_ignores_secondary_metrics():
    stats = [stat(TOX, 0.8, 0.6), stat(R1, 0.1, 0.1)]
    data = report([row("a", res(TOX, 0.8))], metrics=[TOX, R1], stats=stats)
    (p,) = of_type(find_problems(data), "below_threshold")
    assert p.metric == "Toxicity" and p.severity == "high"  # 0.3 above a lower-is-better 0.5
    assert "above its threshold 0.5 (lower is better)" in p.description

    fine = report([row("a", res(TOX, 0.2))], metrics=[TOX], stats=[stat(TOX, 0.2, 1.0)])
    assert of_type(find_problems(fine), "below_threshold") == []


def test_below_threshold_on_an_unbounded_metric_uses_the_observed_range():
    perplexity = MetricInfo(
        metric="Perplexity",
        evaluator="Perplexity",
        primary=True,
        threshold=50,
        higher_is_better=False,
    )
    # Range [0, 100]: misses by 10 = 0.10 of it -> low (as a [0, 1] metric it would be high).
    s = stat(perplexity, 60.0, 0.6, min=20.0, max=100.0)
    data = report([row("a", res(perplexity, 60.0))], metrics=[perplexity], stats=[s])
    (p,) = of_type(find_problems(data), "below_threshold")
    assert p.severity == "low"


# ------------------------------------------------------------------ target and task errors


def failing_rows(total: int, bad: int, error: str, status: str = "target_error") -> list[CaseRow]:
    rows = [row(f"ok{i}", res(ROUGE, 0.9), latency_ms=1000.0 + i) for i in range(total - bad)]
    rows += [
        row(
            f"bad{i}",
            res(ROUGE, status="error", reason="not scored: the target call failed"),
            status=status,
            error=error,
            contexts=[],
        )
        for i in range(bad)
    ]
    return rows


def test_timeouts_high_from_ten_percent_of_rows():
    timeout = "lambda fn did not answer within timeout_seconds=30 (after retries)."
    data = report(failing_rows(10, 1, timeout), config={"target": {"timeout_seconds": 30}})
    problems = find_problems(data)
    (p,) = of_type(problems, "target_timeouts")
    assert p.severity == "high" and p.affected_cases == ["bad0"]
    assert "1 of 10 target calls (10%) timed out" in p.description
    assert "slowest answer took 1.0 s" in p.description
    assert "raise target.timeout_seconds, now 30" in p.suggested_action
    assert of_type(problems, "target_errors") == []
    # The target's failure is not an evaluator error.
    assert of_type(problems, "evaluator_errors") == []

    lower = find_problems(report(failing_rows(11, 1, "ReadTimeoutError: read timed out")))
    assert of_type(lower, "target_timeouts")[0].severity == "medium"


def test_other_target_errors_and_task_failures():
    rows = failing_rows(20, 1, "AccessDenied: not allowed to invoke")
    rows += failing_rows(3, 3, "no result was recorded", status="task_failed")
    problems = find_problems(report(rows))
    (err,) = of_type(problems, "target_errors")
    assert err.severity == "medium"  # 1 of 23 rows
    assert "AccessDenied: not allowed to invoke" in err.description
    assert "target's logs" in err.suggested_action
    (task,) = of_type(problems, "task_failures")
    assert task.severity == "high" and len(task.affected_cases) == 3  # 3 of 23 ≥ 10%
    assert "execution history" in task.suggested_action


# -------------------------------------------------------------------------- empty context


def test_empty_context_when_other_rows_have_some():
    rows = [row(f"c{i}", res(ROUGE, 0.9)) for i in range(9)] + [
        row("empty", res(ROUGE, 0.9), contexts=[])
    ]
    (p,) = of_type(find_problems(report(rows)), "empty_context")
    assert p.severity == "medium" and p.affected_cases == ["empty"]  # 1 of 10
    assert "retriever's index" in p.suggested_action

    rows = [row(f"c{i}", res(ROUGE, 0.9)) for i in range(11)] + [
        row("empty", res(ROUGE, 0.9), contexts=[])
    ]
    assert of_type(find_problems(report(rows)), "empty_context")[0].severity == "low"


def test_no_context_anywhere_is_high_only_when_a_metric_needs_it():
    skip = "skipped: the target returned no retrieved context"
    rows = [
        row(f"c{i}", res(ROUGE, 0.9), res(CTX, status="skipped", reason=skip), contexts=[])
        for i in range(3)
    ]
    (p,) = of_type(find_problems(report(rows, metrics=[ROUGE, CTX])), "empty_context")
    assert p.severity == "high" and len(p.affected_cases) == 3
    assert "target.contexts_path" in p.suggested_action

    plain_llm = [row(f"c{i}", res(ROUGE, 0.9), contexts=[]) for i in range(3)]
    assert of_type(find_problems(report(plain_llm)), "empty_context") == []


# ----------------------------------------------------------- instability, regression, errors


@pytest.mark.parametrize(
    ("instability", "severity"), [(0.19, None), (0.2, "medium"), (0.4, "high")]
)
def test_instability_of_a_primary_metric(instability, severity):
    rows = [
        row("steady", res(ROUGE, 0.8), iteration=1),
        row("steady", res(ROUGE, 0.8), iteration=2),
        row("jumpy", res(ROUGE, 0.9), iteration=1),
        row("jumpy", res(ROUGE, 0.3), iteration=2),
    ]
    data = report(rows, stats=[stat(ROUGE, 0.8, 0.8, instability=instability)], iterations=2)
    found = of_type(find_problems(data), "instability")
    if severity is None:
        assert found == []
        return
    (p,) = found
    assert p.severity == severity and p.affected_cases == ["jumpy"]
    assert "not repeatable" in p.description


def test_regression_from_the_comparison_is_high():
    reg = Regression(
        baseline_run_id="r0",
        baseline_started_at="2026-11-21T10:00:00+00:00",
        baseline_report_prefix="test-reports/t/261121-100000-",
        verdict="regression",
        reasons=["ROUGE-L fell by 0.21 (95% CI −0.29 to −0.13)", "1 case that passed now fails: b"],
        deltas=[
            MetricDelta(
                metric="ROUGE-L",
                evaluator="Rouge Metric",
                higher_is_better=True,
                baseline_average=0.8,
                current_average=0.59,
                delta=-0.21,
                ci_low=-0.29,
                ci_high=-0.13,
                significant=True,
                worse=True,
            )
        ],
        new_failures=[CaseFlip(case_id="b", metric="ROUGE-L", before=True, after=False)],
    )
    data = report([row("b", res(ROUGE, 0.9))], regression=reg)
    (p,) = of_type(find_problems(data), "regression")
    assert p.severity == "high" and p.affected_cases == ["b"] and p.metric == "ROUGE-L"
    assert "ROUGE-L fell by 0.21" in p.description and "r0" in p.description
    assert "test-reports/t/261121-100000-details.csv" in p.suggested_action

    calm = reg.model_copy(update={"verdict": "no significant change"})
    assert of_type(find_problems(report([], regression=calm)), "regression") == []


def test_evaluator_errors_on_answered_rows():
    boom = "error: ValueError: bad schema"
    rows = [row(f"c{i}", res(ROUGE, 0.9)) for i in range(9)]
    rows.append(row("x", res(ROUGE, status="error", reason=boom)))
    (p,) = of_type(find_problems(report(rows)), "evaluator_errors")
    assert p.severity == "high"  # 1 of 10 answered rows
    assert p.affected_cases == ["x"] and p.metric == "ROUGE-L"
    assert "Rouge Metric errored on 1 of 10 answers" in p.description and boom in p.description

    rows += [row(f"d{i}", res(ROUGE, 0.9)) for i in range(10)]
    score = "not scored: the Score step failed (Batch job failed)"
    rows.append(row("y", res(ROUGE, status="error", reason=score)))
    (p,) = of_type(find_problems(report(rows)), "evaluator_errors")
    assert p.severity == "medium" and p.affected_cases == ["x", "y"]  # 2 of 21


@pytest.mark.parametrize(("total", "expected"), [(25, None), (10, "medium"), (3, "high")])
def test_parsing_failures_above_five_percent(total, expected):
    rows = [row(f"c{i}", res(ROUGE, 0.9)) for i in range(total - 1)]
    rows.append(row("p", res(ROUGE, status="error", reason="parsing failure: no JSON")))
    problems = find_problems(report(rows))
    found = of_type(problems, "parsing_failures")
    assert of_type(problems, "evaluator_errors") == []  # counted once, as a parsing failure
    if expected is None:
        assert found == []
    else:
        assert found[0].severity == expected and found[0].affected_cases == ["p"]


def test_problems_are_ordered_by_severity_then_type_then_metric():
    rows = failing_rows(19, 2, "boom")  # target_errors, high (2 of 20 rows)
    rows.append(row("empty", res(ROUGE, 0.9), contexts=[]))  # empty_context, low (1 of 18)
    stats = [stat(ROUGE, 0.70, 0.8), stat(TOX, 0.9, 0.2)]  # ROUGE-L low, Toxicity high
    problems = find_problems(report(rows, metrics=[ROUGE, TOX], stats=stats))
    assert [(p.severity, p.type, p.metric) for p in problems] == [
        ("high", "below_threshold", "Toxicity"),
        ("high", "target_errors", None),
        ("low", "below_threshold", "ROUGE-L"),
        ("low", "empty_context", None),
    ]


# ---------------------------------------------------------------------------------- insights


def insight(data: ReportData, kind: str):
    found = [i for i in find_insights(data) if i.type == kind]
    return found[0] if found else None


def test_slowest_and_fastest_cases_by_mean_latency():
    rows = [
        row("a", res(ROUGE, 0.9), iteration=1, latency_ms=100.0),
        row("a", res(ROUGE, 0.9), iteration=2, latency_ms=300.0),
        row("b", res(ROUGE, 0.9), latency_ms=50.0),
        row("c", res(ROUGE, 0.9), latency_ms=900.0),
        row("d", res(ROUGE, status="error"), status="target_error", latency_ms=None),
    ]
    data = report(rows)
    slow, fast = insight(data, "slowest"), insight(data, "fastest")
    assert slow.affected_cases == ["c"] and slow.value == 900.0
    assert "Slowest case: c, 900 ms" in slow.description
    assert fast.affected_cases == ["b"] and fast.value == 50.0
    assert insight(report(rows[:2]), "slowest") is None  # one case: nothing to compare


def test_costliest_by_cost_else_tokens():
    rows = [
        row("a", res(ROUGE, 0.9), cost=0.002, input_tokens=900, output_tokens=100),
        row("b", res(ROUGE, 0.9), cost=0.010, input_tokens=10, output_tokens=10),
    ]
    c = insight(report(rows), "costliest")
    assert c.affected_cases == ["b"] and c.value == pytest.approx(0.010)
    for r in rows:
        r.cost = None
    c = insight(report(rows), "costliest")
    assert c.affected_cases == ["a"] and c.value == 1000 and "1,000 tokens" in c.description
    assert insight(report([row("a", res(ROUGE, 0.9))]), "costliest") is None


def test_weakest_metric_and_most_difficult_case():
    rows = [
        row("easy", res(ROUGE, 0.9), res(TOX, 0.1)),
        row("hard", res(ROUGE, 0.1), res(TOX, 0.9)),
        row("half", res(ROUGE, 0.1), res(TOX, 0.1)),
    ]
    stats = [stat(ROUGE, 0.37, 1 / 3), stat(TOX, 0.37, 2 / 3)]
    data = report(rows, metrics=[ROUGE, TOX], stats=stats)
    weak = insight(data, "weakest_metric")
    assert weak.metric == "ROUGE-L" and weak.value == pytest.approx(1 / 3)
    assert weak.affected_cases == ["hard", "half"]
    hard = insight(data, "most_difficult_case")
    assert hard.affected_cases == ["hard"] and hard.value == 2
    assert "failed 2 of 2 checks" in hard.description and "question hard?" in hard.description
    # One primary metric: no "weakest".
    assert insight(report(rows, stats=[stat(ROUGE, 0.37, 1 / 3)]), "weakest_metric") is None


def test_best_and_worst_iteration_when_they_differ_noticeably():
    per_iteration = [stat(ROUGE, 0.8, 0.9, iteration=1), stat(ROUGE, 0.6, 0.6, iteration=2)]
    data = report([], stats=[stat(ROUGE, 0.7, 0.75), *per_iteration], iterations=2)
    best, worst = insight(data, "best_iteration"), insight(data, "worst_iteration")
    assert "Best iteration: 1" in best.description and best.value == pytest.approx(0.9)
    assert "Worst iteration: 2" in worst.description and worst.value == pytest.approx(0.6)

    close = [stat(ROUGE, 0.8, 0.9, iteration=1), stat(ROUGE, 0.8, 0.85, iteration=2)]
    data = report([], stats=[stat(ROUGE, 0.8, 0.875), *close], iterations=2)
    assert insight(data, "best_iteration") is None


def test_most_common_failure_reason_groups_by_normalised_prefix():
    rows = [
        row("a", res(ROUGE, 0.1, reason="not valid JSON: Expecting value at line 1")),
        row("b", res(ROUGE, 0.2, reason="not valid JSON: Extra data at char 12")),
        row("c", res(ROUGE, 0.3, reason="3 schema errors against the schema: 'x' missing")),
        row("d", res(ROUGE, 0.9, reason="not valid JSON: but it passed")),
    ]
    c = insight(report(rows), "common_failure_reason")
    assert c.metric == "ROUGE-L" and c.affected_cases == ["a", "b"]
    assert c.value == pytest.approx(2 / 3)
    assert "(2 of 3 failures): not valid JSON: Expecting value" in c.description
    assert normalize_reason("ROUGE-L F1 0.320 (precision 0.5)") == "rouge-l f1 #"
    assert normalize_reason("found 'Bob' and \"x\" in 2 places") == "found … and … in # places"
    assert normalize_reason("ROUGE-2 F1 0.5") == "rouge-2 f1 #"
