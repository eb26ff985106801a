"""Realistic pages for the browser checks: a report, a target's history and a leaderboard,
with the long names and many columns real runs have."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from evalrunner.reports.analysis.leaderboard import build_leaderboard
from evalrunner.reports.views.html import render_history, render_leaderboard, render_report
from evalrunner.reports.writers.history import History, HistoryMetric, HistoryRun, history_context
from tests.integration.test_report_browser import METRICS, synthetic_report


def report_page() -> str:
    return render_report(synthetic_report(40))


def day(i: int) -> datetime:
    """The start of the history's ``i``-th run: one a day at 09:00 UTC from 10 November."""
    return datetime(2026, 11, 10, 9, 0, tzinfo=UTC) + timedelta(days=i)


def history_page(runs: int = 12) -> str:
    metrics = [
        HistoryMetric(
            metric=m.metric,
            evaluator=m.evaluator,
            threshold=m.threshold,
            higher_is_better=m.higher_is_better,
        )
        for m in METRICS
        if m.primary
    ]
    history = History(
        target="hr-bot-AGENT42-ALIAS7",
        generated_at="2026-11-26T09:00:00+00:00",
        metrics=metrics,
        runs=[
            HistoryRun(
                run_id=f"{day(i):%y%m%d}-090000-a1b2c3",
                started_at=day(i).isoformat(),
                suite="test-suites/hr-policy-regression.xlsx",
                report=f"{day(i):%y%m%d}-090000-report.html",
                items=240,
                answered=238 - i % 3,
                gates_passed=i % 4 != 3,
                verdict="regression" if i % 4 == 3 else "no significant change",
                worse_metrics=["Faithfulness"] if i % 4 == 3 else [],
                pass_rate=0.7 + (i % 5) / 20,
                averages={m.metric: 0.6 + ((i * 7 + k) % 10) / 30 for k, m in enumerate(metrics)},
            )
            for i in range(runs)
        ],
    )
    return render_history(history_context(history))


def leaderboard_page() -> str:
    runs = []
    for n, name in enumerate(("hr-bot-claude-sonnet", "hr-bot-llama-70b", "hr-bot-mistral-large")):
        run = synthetic_report(30, seed=n + 1)
        runs.append(run.model_copy(update={"target": name, "run_id": f"run-{name}"}))
    return render_leaderboard(build_leaderboard(runs, created_at="2026-11-26T09:00:00+00:00"))
