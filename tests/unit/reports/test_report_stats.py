"""Report data and the details/result tables: statistics on a hand-built two-iteration run,
and the documented details.csv layout."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, ClassVar

import pytest

from evalrunner.evaluators.base import Evaluator, Input, MetricResult, MetricSpec, Sample, Scored
from evalrunner.reports.analysis.stats import (
    RESULT_COLUMNS,
    case_rows,
    compute_stats,
    detail_table,
    metric_infos,
    result_table,
)
from evalrunner.reports.model import CaseRow, MetricInfo, MetricStats
from evalrunner.run import CaseRecord, ManifestItem
from evalrunner.suite.model import TestCase
from evalrunner.targets.base import TargetResponse


class Quality(Evaluator):
    name: ClassVar[str] = "quality"
    description: ClassVar[str] = "test evaluator with two metrics"
    inputs: ClassVar[frozenset[Input]] = frozenset({Input.ANSWER})
    metrics: ClassVar[tuple[MetricSpec, ...]] = (
        MetricSpec("alpha", "higher is better", threshold=0.5),
        MetricSpec("beta", "lower is better", higher_is_better=False, threshold=0.3, primary=True),
    )

    def score(self, sample: Sample) -> Mapping[str, Scored]:
        return {"alpha": Scored(1.0, "ok"), "beta": Scored(0.0, "ok")}


class Other(Evaluator):
    name: ClassVar[str] = "other"
    description: ClassVar[str] = "test evaluator never run"
    inputs: ClassVar[frozenset[Input]] = frozenset({Input.ANSWER})
    metrics: ClassVar[tuple[MetricSpec, ...]] = (MetricSpec("gamma", "one metric"),)

    def score(self, sample: Sample) -> Mapping[str, Scored]:
        return {"gamma": Scored(1.0, "ok")}


ALPHA = MetricInfo(
    metric="alpha", evaluator="quality", primary=False, threshold=0.5, higher_is_better=True
)


def scored(metric: str, score: float, success: bool, evaluator: str = "quality") -> MetricResult:
    return MetricResult(
        evaluator=evaluator,
        metric=metric,
        status="scored",
        score=score,
        success=success,
        threshold=0.5,
        reason=f"{metric} is {score}",
    )


def unscored(metric: str, status: Any, reason: str) -> MetricResult:
    return MetricResult(evaluator="quality", metric=metric, status=status, reason=reason)


def row(case_id: str, iteration: int, *results: MetricResult, status: Any = "ok") -> CaseRow:
    return CaseRow(
        case_id=case_id,
        iteration=iteration,
        question=f"question of {case_id}",
        answer=None if status != "ok" else "an answer",
        status=status,
        results=list(results),
    )


# alpha, run-wide scored values: 0.9 0.4 | 0.7 0.8 0.2 — c3 errored in iteration 1, c4 skipped.
ROWS = [
    row("c1", 1, scored("alpha", 0.9, True), scored("beta", 0.1, True)),
    row("c2", 1, scored("alpha", 0.4, False), scored("beta", 0.5, False)),
    row(
        "c3",
        1,
        unscored("alpha", "error", "not scored: the target call failed"),
        unscored("beta", "error", "not scored: the target call failed"),
        status="target_error",
    ),
    row("c4", 1, unscored("alpha", "skipped", "skipped: no"), scored("beta", 0.2, True)),
    row("c1", 2, scored("alpha", 0.7, True), scored("beta", 0.3, True)),
    # Another evaluator's metric of the same name must not count as quality/alpha.
    row("c2", 2, scored("alpha", 0.8, True), scored("alpha", 0.0, False, evaluator="x")),
    row("c3", 2, scored("alpha", 0.2, False), scored("beta", 0.0, True)),
    row("c4", 2, unscored("alpha", "skipped", "skipped: no"), scored("beta", 0.2, True)),
]
METRICS = metric_infos([Quality(), Other()])


def by_key(stats: list[MetricStats]) -> dict[tuple[str, int | None], MetricStats]:
    return {(s.metric, s.iteration): s for s in stats}


def test_metric_infos_keep_order_primary_and_effective_thresholds() -> None:
    infos = metric_infos([Quality({"alpha": 0.65}), Other({"other": 0.9})])
    assert [(i.evaluator, i.metric, i.primary, i.threshold, i.higher_is_better) for i in infos] == [
        ("quality", "alpha", False, 0.65, True),
        ("quality", "beta", True, 0.3, False),
        ("other", "gamma", True, 0.9, True),
    ]


def test_run_wide_statistics_follow_the_documented_rules() -> None:
    s = by_key(compute_stats(ROWS, METRICS, iterations=2))[("alpha", None)]
    assert s.count == 5
    assert s.average == pytest.approx(3.0 / 5)
    # 3 passed of 5 scored + 1 errored; the 2 skipped count in neither.
    assert s.pass_rate == pytest.approx(3 / 6)
    assert (s.skipped, s.errored) == (2, 1)
    assert (s.min, s.max) == (0.2, 0.9)
    # Sorted 0.2 0.4 0.7 0.8 0.9: p10 at position 0.4 → 0.2 + 0.4 × 0.2.
    assert s.p10 == pytest.approx(0.28)
    assert s.median == pytest.approx(0.7)
    assert s.std == pytest.approx(math.sqrt(0.34 / 4))
    # c1 spreads 0.2, c2 0.4; c3 has one scored iteration and c4 none: left out.
    assert s.instability == pytest.approx(0.3)
    assert (s.evaluator, s.primary, s.threshold, s.higher_is_better) == (
        "quality",
        False,
        0.5,
        True,
    )


def test_per_iteration_statistics() -> None:
    stats = by_key(compute_stats(ROWS, METRICS, iterations=2))
    first, second = stats[("alpha", 1)], stats[("alpha", 2)]
    assert first.count == 2
    assert first.average == pytest.approx(0.65)
    assert first.pass_rate == pytest.approx(1 / 3)  # 0.9 passed; 0.4 failed; c3 errored
    assert (first.skipped, first.errored) == (1, 1)
    assert first.p10 == pytest.approx(0.45)
    assert first.median == pytest.approx(0.65)
    assert first.std == pytest.approx(0.5 / math.sqrt(2))
    assert first.instability is None  # a per-iteration entry has no spread across iterations

    assert second.count == 3
    assert second.average == pytest.approx(1.7 / 3)
    assert second.pass_rate == pytest.approx(2 / 3)
    assert (second.skipped, second.errored) == (1, 0)
    assert (second.min, second.max) == (0.2, 0.8)
    assert second.p10 == pytest.approx(0.3)  # position 0.2 between 0.2 and 0.7
    assert second.median == pytest.approx(0.7)
    assert second.instability is None

    # beta: c2 has no beta result in iteration 2 (not evaluated: counted nowhere).
    beta = stats[("beta", None)]
    assert (beta.count, beta.errored, beta.skipped) == (6, 1, 0)
    assert beta.pass_rate == pytest.approx(5 / 7)  # success as judged (lower is better)
    assert beta.instability == pytest.approx((0.2 + 0.0) / 2)  # c1 and c4 only


def test_order_is_run_wide_block_then_each_iteration_in_metric_order() -> None:
    stats = compute_stats(ROWS, METRICS, iterations=2)
    assert [(s.metric, s.iteration) for s in stats] == [
        ("alpha", None),
        ("beta", None),
        ("gamma", None),
        ("alpha", 1),
        ("beta", 1),
        ("gamma", 1),
        ("alpha", 2),
        ("beta", 2),
        ("gamma", 2),
    ]


def test_metric_without_results_and_single_values() -> None:
    stats = by_key(compute_stats(ROWS, METRICS, iterations=2))
    gamma = stats[("gamma", None)]
    assert (gamma.count, gamma.skipped, gamma.errored) == (0, 0, 0)
    assert gamma.average is gamma.pass_rate is gamma.p10 is gamma.std is gamma.instability is None

    one = compute_stats([row("c1", 1, scored("alpha", 0.6, True))], [ALPHA], iterations=1)
    assert len(one) == 1  # one iteration: no per-iteration entries
    assert (one[0].p10, one[0].median, one[0].std, one[0].instability) == (0.6, 0.6, None, None)

    # An errored-only metric: no average, pass rate 0 (the answer never came).
    errored = compute_stats(
        [row("c1", 1, unscored("alpha", "error", "boom"), status="task_failed")], [ALPHA], 1
    )
    assert errored[0].average is None and errored[0].pass_rate == 0.0

    with pytest.raises(ValueError):
        compute_stats([], [ALPHA], iterations=0)


def test_result_table_header_order_and_formatting() -> None:
    header, body = result_table(compute_stats(ROWS, METRICS, iterations=2)[::-1])
    assert header == list(RESULT_COLUMNS)
    assert header == (
        "name, Metric, Evaluator, Iteration, Primary, Average Score, Pass rate, Count, Skipped, "
        "Errored, Min, P10, Median, Max, Std, Instability, Threshold, Higher is better, Category"
    ).split(", ")
    # Run-wide rows come first whatever order the stats arrive in.
    assert [r[3] for r in body] == ["all"] * 3 + ["1"] * 3 + ["2"] * 3
    alpha_all = next(r for r in body if r[1:4] == ["alpha", "quality", "all"])
    alpha = dict(zip(header, alpha_all, strict=True))
    assert alpha == {
        "name": "alpha",  # not the primary metric: its own name
        "Metric": "alpha",
        "Evaluator": "quality",
        "Iteration": "all",
        "Primary": "false",
        "Average Score": "0.6000",
        "Pass rate": "0.5000",
        "Count": "5",
        "Skipped": "2",
        "Errored": "1",
        "Min": "0.2000",
        "P10": "0.2800",
        "Median": "0.7000",
        "Max": "0.9000",
        "Std": f"{math.sqrt(0.085):.4f}",
        "Instability": "0.3000",
        "Threshold": "0.5000",
        "Higher is better": "true",
        "Category": "",
    }
    gamma_1 = next(r for r in body if r[1:4] == ["gamma", "other", "1"])
    gamma = dict(zip(header, gamma_1, strict=True))
    assert gamma["name"] == ""  # per-iteration rows leave the seed's name empty
    gamma_all = next(r for r in body if r[1:4] == ["gamma", "other", "all"])
    assert gamma_all[0] == "other"  # the primary metric's row carries the evaluator's name
    assert gamma["Average Score"] == gamma["Std"] == gamma["Instability"] == ""
    assert gamma["Primary"] == "true" and gamma["Count"] == "0"


# --- details: same output as the old tables module ------------------------------------------


def _case(index: int, case_id: str, **fields: Any) -> TestCase:
    return TestCase(index=index, case_id=case_id, question=f"What is {case_id}?", **fields)


def _old_and_new_inputs() -> tuple[list[ManifestItem], list[CaseRecord]]:
    cases = [
        _case(0, "c1", expected_answer="Forty-two", categories=["math", "easy"]),
        _case(1, "c2"),
        _case(2, "c3", expected_answer="=1+1"),
    ]
    items, records = [], []
    for iteration in (1, 2):
        for case in cases:
            item = ManifestItem(
                item_id=f"{case.case_id}-{iteration}", iteration=iteration, case=case
            )
            items.append(item)
            records.append(CaseRecord.for_item(item))
    # c1: a full answer, with tokens, unicode contexts and both metrics.
    for record in (records[0], records[3]):
        record.response = TargetResponse(
            answer="It is 42.",
            contexts=["Ünïcode « chunk »", "second"],
            documents=["s3://docs/a.pdf"],
            input_tokens=12,
            output_tokens=3,
            cost=0.001,
        )
        record.latency_ms = 1234.56
        record.results = [scored("alpha", 0.91234, True), scored("beta", 0.05, True)]
    # c2: an empty answer (scored), no tokens; one metric skipped, one never evaluated.
    records[1].response = TargetResponse(answer="")
    records[1].latency_ms = 5
    records[1].results = [unscored("alpha", "skipped", "skipped: no expected answer")]
    # c3 iteration 1: the target failed.
    records[2].status = "target_error"
    records[2].error = "TimeoutError: the agent did not answer in 30 s"
    records[2].results = [
        unscored("alpha", "error", "not scored: the target call failed"),
        unscored("beta", "error", "not scored: the target call failed"),
    ]
    # c2 iteration 2: an answer without a reason-bearing score; c3 iteration 2: task failed.
    records[4].response = TargetResponse(answer="-1 maybe", contexts=[])
    records[4].results = [scored("alpha", 0.0, False), scored("beta", 1.0, False)]
    records[5].status = "task_failed"
    records[5].error = "no result was recorded"
    return items, records


def test_detail_table_keeps_the_documented_details_csv_layout() -> None:
    items, records = _old_and_new_inputs()
    evaluators = [Quality(), Other()]
    header, body = detail_table(case_rows(items, records), metric_infos(evaluators))
    assert header[:16] == [
        "case_id",
        "iteration",
        "categories",
        "question",
        "expected_answer",
        "answer",
        "contexts",
        "documents",
        "latency_ms",
        "input_tokens",
        "output_tokens",
        "status",
        "error",
        "sanitized",
        "truncated",
        "notes",
    ]
    assert len(body) == 6 and all(len(row) == len(header) for row in body)
    assert header[16:19] == ["alpha score", "alpha success", "alpha reason"]
    assert body[2][5:8] == ["", "", ""]  # no response: no answer, contexts or documents
    assert body[1][5:8] == ["", "[]", "[]"]  # an empty answer is still an answer


def test_case_rows_flatten_response_and_record() -> None:
    items, records = _old_and_new_inputs()
    rows = case_rows(items, records)
    assert [(r.case_id, r.iteration) for r in rows] == [
        ("c1", 1),
        ("c2", 1),
        ("c3", 1),
        ("c1", 2),
        ("c2", 2),
        ("c3", 2),
    ]
    full, failed = rows[0], rows[2]
    assert full.categories == ["math", "easy"]
    assert (full.answer, full.input_tokens, full.output_tokens, full.cost) == (
        "It is 42.",
        12,
        3,
        0.001,
    )
    assert full.contexts == ["Ünïcode « chunk »", "second"]
    assert full.documents == ["s3://docs/a.pdf"]
    assert full.latency_ms == 1234.56
    assert [r.metric for r in full.results] == ["alpha", "beta"]
    assert failed.status == "target_error" and failed.error is not None
    assert failed.answer is None and failed.contexts == [] and failed.documents == []
    assert failed.input_tokens is failed.output_tokens is failed.cost is None
    assert rows[1].answer == ""

    with pytest.raises(ValueError):
        case_rows(items, records[:-1])  # every item has its record
