"""One suite against several targets."""

from __future__ import annotations

from typing import Any

import pytest

from evalrunner.evaluators.base import MetricResult
from evalrunner.reports.analysis.leaderboard import build_leaderboard
from evalrunner.reports.model import CaseRow, MetricInfo, MetricStats, ReportData

ROUGE = MetricInfo(
    metric="ROUGE-L", evaluator="Rouge Metric", primary=True, threshold=0.5, higher_is_better=True
)
TOX = MetricInfo(
    metric="Toxicity", evaluator="Toxicity", primary=True, threshold=0.5, higher_is_better=False
)
R1 = MetricInfo(
    metric="ROUGE-1", evaluator="Rouge Metric", primary=False, threshold=0.5, higher_is_better=True
)


def res(info: MetricInfo, score: float | None, status: str = "scored") -> MetricResult:
    success = None
    if status == "scored" and score is not None:
        success = score >= info.threshold if info.higher_is_better else score <= info.threshold
    return MetricResult(
        evaluator=info.evaluator,
        metric=info.metric,
        status=status,
        score=score,
        success=success,
        threshold=info.threshold,
        reason="r",
    )


def stat(info: MetricInfo, average: float | None, pass_rate: float | None) -> MetricStats:
    return MetricStats(
        metric=info.metric,
        evaluator=info.evaluator,
        primary=info.primary,
        threshold=info.threshold,
        higher_is_better=info.higher_is_better,
        average=average,
        pass_rate=pass_rate,
    )


def row(case_id: str, *results: MetricResult, iteration: int = 1, **kw: Any) -> CaseRow:
    return CaseRow(
        case_id=case_id,
        iteration=iteration,
        question=f"question {case_id}?",
        status=kw.pop("status", "ok"),
        results=list(results),
        **kw,
    )


def run(target: str, rows: list[CaseRow], stats: list[MetricStats], **kw: Any) -> ReportData:
    return ReportData(
        run_id=f"run-{target}",
        target=target,
        target_kind="lambdaArn",
        suite=kw.pop("suite", "test-suites/s.csv"),
        started_at="2026-11-22T10:00:00+00:00",
        finished_at="2026-11-22T10:05:00+00:00",
        iterations=kw.pop("iterations", 1),
        config=kw.pop("config", {}),
        metrics=kw.pop("metrics", [ROUGE, TOX]),
        stats=stats,
        rows=rows,
    )


def three_targets() -> list[ReportData]:
    a = run(
        "alpha",
        [
            row("easy", res(ROUGE, 0.9), res(TOX, 0.1), latency_ms=100.0, cost=0.01),
            row("hard", res(ROUGE, 0.2), res(TOX, 0.1), latency_ms=300.0, cost=0.03),
            row("mid", res(ROUGE, 0.9), res(TOX, 0.1), latency_ms=200.0, cost=0.02),
        ],
        [stat(ROUGE, 0.67, 2 / 3), stat(TOX, 0.30, 1.0)],
        config={"report_prefix": "test-reports/alpha/261122-100000-"},
    )
    b = run(
        "beta",
        [
            row("easy", res(ROUGE, 0.9), res(TOX, 0.1), latency_ms=50.0, cost=0.05),
            row("hard", res(ROUGE, 0.1), res(TOX, 0.9), latency_ms=70.0, cost=0.05),
            row("mid", res(ROUGE, 0.3), res(TOX, 0.1), latency_ms=60.0, cost=0.05),
        ],
        [stat(ROUGE, 0.43, 1 / 3), stat(TOX, 0.20, 2 / 3)],
    )
    c = run(
        "gamma",
        [
            row("easy", res(ROUGE, 0.9), res(TOX, 0.1), latency_ms=900.0, input_tokens=10),
            row(
                "hard",
                res(ROUGE, None, "error"),
                res(TOX, None, "error"),
                status="target_error",
                error="boom",
            ),
            row("mid", res(ROUGE, 0.9), res(TOX, None, "skipped"), latency_ms=800.0),
        ],
        [stat(ROUGE, 0.90, 2 / 3), stat(TOX, 0.10, 0.5)],
    )
    return [a, b, c]


def test_entries_carry_averages_latency_cost_and_errors():
    board = build_leaderboard(three_targets(), created_at="2026-11-22T11:00:00+00:00")
    assert board.suite == "test-suites/s.csv" and board.created_at.startswith("2026-11-22")
    assert [m.metric for m in board.metrics] == ["ROUGE-L", "Toxicity"]
    alpha, beta, gamma = board.entries
    assert alpha.target == "alpha" and alpha.run_id == "run-alpha"
    assert alpha.report_prefix == "test-reports/alpha/261122-100000-"
    assert alpha.averages == {"ROUGE-L": 0.67, "Toxicity": 0.30}
    assert beta.pass_rates["ROUGE-L"] == pytest.approx(1 / 3)
    assert alpha.latency_median_ms == 200.0
    assert alpha.latency_p95_ms == pytest.approx(290.0)  # linear between 200 and 300
    assert alpha.total_cost == pytest.approx(0.06) and alpha.total_tokens is None
    assert gamma.total_cost is None and gamma.total_tokens == 10
    assert (alpha.errors, beta.errors, gamma.errors) == (0, 0, 1)


def test_best_per_metric_respects_direction_and_ties_go_first():
    board = build_leaderboard(three_targets(), created_at="now")
    assert board.best_per_metric == {"ROUGE-L": "gamma", "Toxicity": "gamma"}

    runs = three_targets()
    runs[2] = runs[2].model_copy(
        update={"stats": [stat(ROUGE, 0.67, 2 / 3), stat(TOX, 0.40, 0.5)]}  # ROUGE-L ties alpha
    )
    board = build_leaderboard(runs, created_at="now")
    assert board.best_per_metric == {"ROUGE-L": "alpha", "Toxicity": "beta"}  # lowest toxicity


def test_metrics_union_and_missing_metric_is_none():
    runs = three_targets()
    runs[1] = runs[1].model_copy(update={"metrics": [ROUGE, TOX, R1]})
    runs[1].stats.append(stat(R1, 0.5, 0.5))
    board = build_leaderboard(runs, created_at="now")
    assert [m.metric for m in board.metrics] == ["ROUGE-L", "Toxicity", "ROUGE-1"]
    assert board.entries[0].averages["ROUGE-1"] is None
    assert board.best_per_metric["ROUGE-1"] == "beta"


def test_difficult_cases_most_failed_first():
    board = build_leaderboard(three_targets(), created_at="now")
    cases = [(c.case_id, c.failed_by) for c in board.difficult_cases]
    # hard: failed by all three (gamma's target error counts as a failure);
    # mid: failed by beta only; easy: passed by all, not listed.
    assert cases == [("hard", ["alpha", "beta", "gamma"]), ("mid", ["beta"])]
    hard = board.difficult_cases[0]
    assert hard.question == "question hard?"
    assert hard.pass_share == {"alpha": 0.5, "beta": 0.0, "gamma": 0.0}
    # gamma's skipped Toxicity on "mid" is not judged: 1 of 1 passed.
    assert board.difficult_cases[1].pass_share == {"alpha": 1.0, "beta": 0.5, "gamma": 1.0}


def test_difficult_cases_ties_on_targets_break_on_pass_share():
    a = run(
        "a",
        [row("x", res(ROUGE, 0.1), res(TOX, 0.1)), row("y", res(ROUGE, 0.1), res(TOX, 0.9))],
        [],
    )
    board = build_leaderboard([a], created_at="now")
    assert [c.case_id for c in board.difficult_cases] == ["y", "x"]  # 0.0 before 0.5


def test_failed_by_more_targets_comes_before_a_lower_pass_share():
    def rows(y_passes: bool) -> list[CaseRow]:
        y = (0.9, 0.1) if y_passes else (0.1, 0.9)
        return [
            row("y", res(ROUGE, y[0]), res(TOX, y[1]), iteration=1),
            row("y", res(ROUGE, y[0]), res(TOX, y[1]), iteration=2),
            row("x", res(ROUGE, 0.9), res(TOX, 0.1), iteration=1),
            row("x", res(ROUGE, 0.9), res(TOX, 0.9), iteration=2),  # 3 of 4 pass
        ]

    board = build_leaderboard(
        [run("a", rows(False), [], iterations=2), run("b", rows(True), [], iterations=2)],
        created_at="now",
    )
    # x: failed by both (mean share 0.75); y: failed by a only (mean share 0.5).
    assert [(c.case_id, c.failed_by) for c in board.difficult_cases] == [
        ("x", ["a", "b"]),
        ("y", ["a"]),
    ]
    assert board.difficult_cases[0].pass_share == {"a": 0.75, "b": 0.75}


def test_fastest_slowest_cheapest_costliest():
    board = build_leaderboard(three_targets(), created_at="now")
    assert board.fastest == "beta" and board.slowest == "gamma"
    # Cost per row: alpha 0.02, beta 0.05; gamma reports none.
    assert board.cheapest == "alpha" and board.costliest == "beta"

    runs = three_targets()
    for r in runs:
        for x in r.rows:
            x.cost = None
    runs[0].rows[0].input_tokens, runs[0].rows[0].output_tokens = 500, 500
    board = build_leaderboard(runs, created_at="now")
    assert board.cheapest == "gamma" and board.costliest == "alpha"  # by tokens per row


def test_runs_of_different_suites_or_the_same_target_are_refused():
    runs = three_targets()
    runs[1] = runs[1].model_copy(update={"suite": "test-suites/other.csv"})
    with pytest.raises(ValueError, match=r"one suite.*beta \(run run-beta\): test-suites/other"):
        build_leaderboard(runs, created_at="now")
    runs = three_targets()
    runs[1] = runs[1].model_copy(update={"target": "alpha"})
    with pytest.raises(ValueError, match="more than one run of: alpha"):
        build_leaderboard(runs, created_at="now")
    with pytest.raises(ValueError, match="at least one run"):
        build_leaderboard([], created_at="now")


def test_entries_carry_the_mean_primary_pass_rate_and_the_gates():
    from evalrunner.reports.model import Gate

    alpha, beta, gamma = three_targets()
    gate = Gate(metric="ROUGE-L", gate="ROUGE-L", threshold=0.5, average=0.43, passed=False)
    beta = beta.model_copy(update={"gates": [gate]})
    entries = build_leaderboard([alpha, beta, gamma], created_at="2026-11-22T11:00:00").entries
    assert entries[0].pass_rate == pytest.approx((2 / 3 + 1.0) / 2)
    assert entries[1].pass_rate == pytest.approx((1 / 3 + 2 / 3) / 2)
    # no gate: None (shown "—"), not a pass
    assert [e.gates_passed for e in entries] == [None, False, None]


def test_each_entry_carries_its_runs_one_verdict_and_the_page_shows_it():
    """The leaderboard is one more surface of each run's verdict: it shows the verdict the
    run was given (passed, a failed gate, a stopped run), never one of its own."""
    from bs4 import BeautifulSoup

    from evalrunner.reports.model import Gate
    from evalrunner.reports.verdict import decide
    from evalrunner.reports.views.html import render_leaderboard

    gate = Gate(metric="ROUGE-L", gate="ROUGE-L", threshold=0.5, average=0.43, passed=False)
    verdicts = [
        decide(items=3, answered=3, stats=[], gates=[], regressed=False),
        decide(items=3, answered=3, stats=[], gates=[gate], regressed=False),
        decide(items=3, answered=1, stats=[], gates=[], regressed=False, partial=True),
    ]
    runs = [
        r.model_copy(update={"verdict": v}) for r, v in zip(three_targets(), verdicts, strict=True)
    ]
    board = build_leaderboard(runs, created_at="2026-11-22T11:00:00")
    assert [e.verdict for e in board.entries] == ["PASSED", "FAILED", "PARTIAL"]
    page = BeautifulSoup(render_leaderboard(board), "html.parser")
    cells = [c.get_text(strip=True) for c in page.select("table.leaderboard td.verdict")]
    assert cells == ["PASSED", "FAILED", "PARTIAL"]
