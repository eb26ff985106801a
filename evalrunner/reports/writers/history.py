"""A target's history: every primary metric of every complete run over time, with its
threshold, the runs that were regressions marked, the pass rate per run, and links to each
run's report. Written as ``test-reports/<target>/history.json`` and ``history.html``.

Built from the summaries of the target's complete report sets only (the same rule as the
baseline lookup: a set without its manifest, or whose summary is not the listed file, is not
a run), so the page shows what the reports show. Aggregate refreshes it after every run
(deployed and local), so the bucket always holds the current trend page;
``evalrunner history`` rebuilds it from a local ``--out`` folder or the bucket.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from evalrunner.reports.model import Verdict
from evalrunner.reports.summary import RunSummary
from evalrunner.reports.verdict import Outcome
from evalrunner.reports.writers.publish import (
    MANIFEST_NAME,
    SUMMARY_NAME,
    complete_summaries,
    local_complete_sets,
    local_verified,
    read_summary,
    run_order,
)
from evalrunner.storage import REPORTS_PREFIX, RunStore

HISTORY_JSON = "history.json"
HISTORY_HTML = "history.html"


class HistoryMetric(BaseModel):
    """A primary metric seen in the history, with its latest threshold and direction."""

    metric: str
    evaluator: str
    threshold: float
    higher_is_better: bool


class HistoryRun(BaseModel):
    """One complete run of the target."""

    run_id: str
    started_at: str
    suite: str
    #: report.html of the run, relative to the history page (same folder)
    report: str
    items: int
    answered: int
    gates_passed: bool
    #: the run's own verdict (:mod:`evalrunner.reports.verdict`) and its headline, as the
    #: run's summary says (None: a history written before verdicts existed)
    outcome: Outcome | None = None
    headline: str | None = None
    #: the run's comparison with its baseline (None: nothing to compare with)
    verdict: Verdict | None = None
    #: metrics significantly worse than in the run's baseline (primary ones are marked)
    worse_metrics: list[str] = Field(default_factory=list)
    #: mean pass rate of the run's primary metrics (None: none was scored)
    pass_rate: float | None = None
    #: primary metric -> its average in this run
    averages: dict[str, float | None] = Field(default_factory=dict)
    #: primary metric -> its pass rate in this run (the series a monitor's alarms watch)
    pass_rates: dict[str, float | None] = Field(default_factory=dict)

    @property
    def regressed(self) -> bool:
        return self.verdict == "regression"


class History(BaseModel):
    target: str
    generated_at: str
    metrics: list[HistoryMetric]
    #: oldest first
    runs: list[HistoryRun]


def history_keys(target: str) -> tuple[str, str]:
    """(history.json, history.html) keys of ``target``."""
    folder = f"{REPORTS_PREFIX}{target}/"
    return folder + HISTORY_JSON, folder + HISTORY_HTML


def build_history(
    target: str, summaries: Iterable[RunSummary], now: datetime | None = None
) -> History:
    """The history of ``target`` from its runs' summaries (any order). A stopped run's
    partial set is listed (its verdict says PARTIAL, so a stop is seen) but is no point of
    the trends: it measured only the cases that finished."""
    ordered = sorted(summaries, key=run_order)
    metrics: dict[str, HistoryMetric] = {}
    runs = []
    for s in ordered:
        primary = [m for m in s.metrics if m.primary]
        for m in primary:  # the latest run's threshold wins
            metrics[m.metric] = HistoryMetric(
                metric=m.metric,
                evaluator=m.evaluator,
                threshold=m.threshold,
                higher_is_better=m.higher_is_better,
            )
        rates = [m.pass_rate for m in primary if m.pass_rate is not None]
        runs.append(
            HistoryRun(
                run_id=s.run_id,
                started_at=s.started_at,
                suite=s.suite,
                report=s.reports.html.rsplit("/", 1)[-1],
                items=s.items,
                answered=s.answered_runs(),
                gates_passed=s.gates_passed,
                outcome=s.verdict.outcome,
                headline=s.verdict.headline,
                verdict=s.regression.verdict if s.regression else None,
                worse_metrics=s.regression.worse_metrics if s.regression else [],
                pass_rate=sum(rates) / len(rates) if rates else None,
                averages={m.metric: m.average for m in primary},
                pass_rates={m.metric: m.pass_rate for m in primary},
            )
        )
    first_seen = list(dict.fromkeys(name for r in runs for name in r.averages))
    return History(
        target=target,
        generated_at=(now or datetime.now(UTC)).isoformat(timespec="seconds"),
        metrics=[metrics[name] for name in first_seen],
        runs=runs,
    )


def history_context(history: History) -> dict[str, Any]:
    """What history.html.j2 draws: a trend chart per metric, and the runs newest first."""
    from evalrunner.reports.model import MetricInfo
    from evalrunner.reports.views.charts import TrendPoint, trend

    charts = []
    for m in history.metrics:
        info = MetricInfo(
            metric=m.metric,
            evaluator=m.evaluator,
            primary=True,
            threshold=m.threshold,
            higher_is_better=m.higher_is_better,
        )
        points = [
            TrendPoint(
                value=r.averages.get(m.metric),
                title=f"{r.started_at} · run {r.run_id}: {m.metric} "
                f"{_number(r.averages.get(m.metric))}"
                + _pass_rate(r.pass_rates.get(m.metric))
                + (" · regression" if m.metric in r.worse_metrics else ""),
                href=r.report,
                regressed=m.metric in r.worse_metrics,
                label=run_label(r),
            )
            for r in history.runs
            if r.outcome is not Outcome.PARTIAL
        ]
        charts.append((m, trend(m.metric, points, info)))
    return {
        "history": history,
        "charts": charts,
        "runs": list(reversed(history.runs)),
        "regressions": sum(r.regressed for r in history.runs),
    }


def _pass_rate(rate: float | None) -> str:
    return "" if rate is None else f" · pass rate {rate:.0%}"


def run_label(run: HistoryRun) -> tuple[str, ...]:
    """A run's label on a trend's x axis: the day and time it started (``11-26``,
    ``09:00``, UTC), short enough for a run every 56 px; its id when the start cannot be
    read."""
    try:
        started = datetime.fromisoformat(run.started_at).astimezone(UTC)
    except ValueError:
        return (run.run_id[:8],)
    return (started.strftime("%m-%d"), started.strftime("%H:%M"))


def _number(value: float | None) -> str:
    return "no score" if value is None else f"{value:.3f}"


def render(history: History) -> tuple[bytes, bytes]:
    """(history.json, history.html) contents."""
    from evalrunner.reports.views.html import render_history

    return (
        history.model_dump_json(indent=2).encode("utf-8"),
        render_history(history_context(history)).encode("utf-8"),
    )


def refresh_history(store: RunStore, target: str, now: datetime | None = None) -> History:
    """Rebuild ``target``'s history from the complete sets in the bucket and write it."""
    history = build_history(target, (c.summary for c in complete_summaries(store, target)), now)
    body, page = render(history)
    json_key, html_key = history_keys(target)
    store.put_bytes(json_key, body, "application/json")
    store.put_bytes(html_key, page, "text/html; charset=utf-8")
    return history


def local_history(out_dir: Path, target: str, now: datetime | None = None) -> list[Path]:
    """Rebuild ``target``'s history from the complete sets in a local ``--out`` folder and
    write it there; returns the two files.

    Runs of one target that finish together (a CI matrix, a script starting eight at once)
    each rebuild it after writing their own set's manifest, one at a time (a lock file in the
    target's folder), and each file is replaced whole: the last rebuild sees every set, so
    every run is in the history (each used to copy the page its own engine built, which knew
    only the sets that were complete when it started: the last copy won, and one run of
    eight was listed)."""
    folder = out_dir / REPORTS_PREFIX / target
    folder.mkdir(parents=True, exist_ok=True)
    with _locked(folder / ".history.lock"):
        return _write_local_history(out_dir, folder, target, now)


def _write_local_history(
    out_dir: Path, folder: Path, target: str, now: datetime | None
) -> list[Path]:
    summaries = []
    for _, manifest_path, manifest in local_complete_sets(folder):
        base = manifest_path.relative_to(out_dir).as_posix()
        key = base[: -len(MANIFEST_NAME)] + SUMMARY_NAME
        summary = read_summary(local_verified(out_dir, manifest, key))
        if summary is not None:
            summaries.append(summary)
    body, page = render(build_history(target, summaries, now))
    paths = [out_dir / key for key in history_keys(target)]
    for path, data in zip(paths, (body, page), strict=True):
        temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        try:
            temporary.write_bytes(data)
            os.replace(temporary, path)
        finally:
            temporary.unlink(missing_ok=True)
    return paths


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    """An exclusive lock on ``path`` across processes (``flock``; where there is none, as on
    Windows, no lock: the rebuilds may then race, as they did before)."""
    if sys.platform == "win32":
        yield
        return
    import fcntl

    with open(path, "a+b") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


__all__ = [
    "HISTORY_HTML",
    "HISTORY_JSON",
    "History",
    "HistoryMetric",
    "HistoryRun",
    "build_history",
    "history_context",
    "history_keys",
    "local_history",
    "refresh_history",
]
