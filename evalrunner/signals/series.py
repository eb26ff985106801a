"""The series a finished run adds to: per primary metric, its ``Average`` score and its
``PassRate`` (0–1), with the dimensions ``Target``, ``Suite`` and ``Metric``, at the time the
run finished. The same values are what the target's history records for the run
(:mod:`evalrunner.reports.writers.history`: ``averages`` and ``pass_rates``), so a local run's
history and a deployed run's CloudWatch metrics are one series read two ways.

A monitor writes a new suite for every run (``test-suites/_monitor/<name>/<run id>.json``),
so the suite of a monitor run is named by its folder (``_monitor/<name>``): every run of one
monitor is one series, and an alarm can name it before the first run.
"""

from __future__ import annotations

import posixpath
from datetime import UTC, datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict

from evalrunner.event_rules import MONITOR_FOLDER, MONITOR_SUITE_PREFIX, SUITE_PREFIX
from evalrunner.reports.summary import RunSummary

SeriesName = Literal["Average", "PassRate"]
SERIES: tuple[SeriesName, ...] = ("Average", "PassRate")


class Datapoint(BaseModel):
    """One value of one series."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: SeriesName
    target: str
    suite: str
    metric: str
    value: float
    timestamp: datetime


def is_monitor_run(summary: RunSummary) -> bool:
    """A run the deployed monitor started: logged answers from a suite in the monitor's
    folder (signals are published for these only; a suite run's pass rates are the
    dashboard's EMF metrics)."""
    return summary.target_kind == "logged" and summary.suite.startswith(MONITOR_SUITE_PREFIX)


def suite_label(summary: RunSummary) -> str:
    """The ``Suite`` dimension: a monitor's folder (``_monitor/prod-hr``) for a monitor run,
    else the suite's key without ``test-suites/``."""
    key = summary.suite
    if is_monitor_run(summary):
        key = posixpath.dirname(key)
    return key[len(SUITE_PREFIX) :] if key.startswith(SUITE_PREFIX) else key


def monitor_suite_label(name: str) -> str:
    """The ``Suite`` of every run of the monitor ``name`` (what its alarms name)."""
    return f"{MONITOR_FOLDER}{name}"


def run_series(summary: RunSummary) -> list[Datapoint]:
    """The run's datapoints: Average and PassRate of each primary metric that was scored
    (a metric no case could be scored on adds nothing, rather than a zero that would look
    like a drop). A stopped run's partial figures add nothing either."""
    if summary.partial:
        return []
    when = _finished(summary)
    suite = suite_label(summary)
    points = []
    for m in summary.metrics:
        if not m.primary:
            continue
        values: tuple[tuple[SeriesName, float | None], ...] = (
            ("Average", m.average),
            ("PassRate", m.pass_rate),
        )
        for name, value in values:
            if value is not None:
                points.append(
                    Datapoint(
                        name=name,
                        target=summary.target,
                        suite=suite,
                        metric=m.metric,
                        value=float(value),
                        timestamp=when,
                    )
                )
    return points


def _finished(summary: RunSummary) -> datetime:
    try:
        when = datetime.fromisoformat(summary.finished_at)
    except ValueError:
        return datetime.now(UTC)
    return when if when.tzinfo else when.replace(tzinfo=UTC)
