"""The history page's run labels and column order (its layout is checked in Chromium by
tests/integration/test_pages_narrow.py)."""

from __future__ import annotations

from bs4 import BeautifulSoup

from evalrunner.reports.views.charts import TREND_MIN_WIDTH
from evalrunner.reports.writers.history import HistoryRun, history_context, run_label
from tests.support.pages import history_page


def a_run(started_at: str) -> HistoryRun:
    return HistoryRun(
        run_id="261126-090000-abcdef",
        started_at=started_at,
        suite="s.csv",
        report="r.html",
        items=1,
        answered=1,
        gates_passed=True,
    )


def test_a_run_is_labelled_by_its_start_day_and_time_in_utc() -> None:
    assert run_label(a_run("2026-11-26T09:05:00+00:00")) == ("11-26", "09:05")
    assert run_label(a_run("2026-11-26T01:30:00+02:00")) == ("11-25", "23:30")
    assert run_label(a_run("yesterday")) == ("261126-0",)  # its id, when unreadable


def test_trends_are_wide_enough_and_label_every_run() -> None:

    page = BeautifulSoup(history_page(runs=30), "html.parser")
    svg = page.select_one("figure.trend svg")
    assert svg is not None and float(str(svg["width"])) >= TREND_MIN_WIDTH
    labels = svg.select("text.run")
    assert len(labels) == 2 * 30  # day and time under each of the 30 runs
    heads = [th.get_text() for th in page.select("table.history th")][:4]
    assert heads == ["Run", "Verdict", "Pass rate", "Gates"]


def test_the_context_gives_each_point_its_label() -> None:
    from evalrunner.reports.writers.history import History, HistoryMetric

    metric = HistoryMetric(metric="m", evaluator="e", threshold=0.5, higher_is_better=True)
    run = a_run("2026-11-26T09:05:00+00:00").model_copy(update={"averages": {"m": 0.7}})
    history = History(target="t", generated_at="now", metrics=[metric], runs=[run])
    ((_, chart),) = history_context(history)["charts"]
    texts = [getattr(s, "text", None) for s in chart.shapes]
    assert "11-26" in texts and "09:05" in texts
