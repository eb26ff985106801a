"""The runs page: which runs a filter keeps, and each primary metric's trend over them (a
sparkline whose geometry is made here, in Python, as the reports' charts are)."""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict, Field

from evalrunner.viewer.store import RunEntry

RUNS_PER_PAGE = 100
#: Sparkline box (SVG user units).
WIDTH, HEIGHT = 160.0, 36.0


class RunsQuery(BaseModel):
    model_config = ConfigDict(extra="ignore")

    target: str = ""
    suite: str = ""
    verdict: str = ""
    #: ISO dates (or any prefix of an ISO timestamp): runs started on or after / on or before
    since: str = Field(default="", max_length=32)
    until: str = Field(default="", max_length=32)
    page: int = Field(default=1, ge=1)
    size: int = Field(default=RUNS_PER_PAGE, ge=1, le=1000)


def filter_runs(runs: Sequence[RunEntry], query: RunsQuery) -> list[RunEntry]:
    """The runs the query keeps, in the order given (newest first)."""
    out = []
    for run in runs:
        if query.target and run.target != query.target:
            continue
        if query.suite and run.suite != query.suite:
            continue
        if query.verdict and run.outcome != query.verdict:
            continue
        day = run.started_at[: len(query.since)] if query.since else ""
        if query.since and day < query.since:
            continue
        if query.until and run.started_at[: len(query.until)] > query.until:
            continue
        out.append(run)
    return out


class Trend(BaseModel):
    """One metric's average over the runs, oldest to newest."""

    metric: str
    target: str
    points: str  # SVG polyline points
    first: float | None
    last: float | None
    runs: int


def trends(runs: Sequence[RunEntry], limit: int = 12) -> list[Trend]:
    """Per target × primary metric, the run averages as a sparkline (the first ``limit``
    series; a filter by target shows that target's)."""
    series: dict[tuple[str, str], list[float]] = {}
    for run in reversed(runs):  # oldest first
        for stats in run.primary():
            if stats.average is not None:
                series.setdefault((run.target, stats.metric), []).append(stats.average)
    out: list[Trend] = []
    for (target, metric), values in list(series.items())[:limit]:
        low, high = min([*values, 0.0]), max([*values, 1.0])
        span = (high - low) or 1.0
        step = WIDTH / max(1, len(values) - 1)
        points = " ".join(
            f"{i * step:.1f},{HEIGHT - (v - low) / span * HEIGHT:.1f}" for i, v in enumerate(values)
        )
        out.append(
            Trend(
                metric=metric,
                target=target,
                points=points,
                first=values[0],
                last=values[-1],
                runs=len(values),
            )
        )
    return out
