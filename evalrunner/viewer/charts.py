"""The leaderboard's charts as shapes (geometry made here, in Python, as the reports' charts
are; the template only draws them): a radar of each target's primary pass rates and a bar
per target and metric."""

from __future__ import annotations

import math

from pydantic import BaseModel

from evalrunner.reports.model import Leaderboard

SIZE = 320.0
RADIUS = 110.0
BAR_WIDTH = 220.0
#: Series colours are CSS classes (the CSP allows no inline style): s0 … s5, then again.
SERIES = 6


class Axis(BaseModel):
    metric: str
    x: float
    y: float
    label_x: float
    label_y: float
    anchor: str


class Polygon(BaseModel):
    target: str
    points: str
    series: int


class Radar(BaseModel):
    axes: list[Axis]
    rings: list[str]
    polygons: list[Polygon]
    centre: float = SIZE / 2
    size: float = SIZE


class Bar(BaseModel):
    target: str
    value: float | None
    width: float
    series: int


class MetricBars(BaseModel):
    metric: str
    bars: list[Bar]


def _point(i: int, count: int, value: float) -> tuple[float, float]:
    angle = -math.pi / 2 + 2 * math.pi * i / count
    centre = SIZE / 2
    return centre + RADIUS * value * math.cos(angle), centre + RADIUS * value * math.sin(angle)


def radar(board: Leaderboard) -> Radar | None:
    """Each target's pass rate on every primary metric (0 at the centre, 100% at the rim);
    None with fewer than three primary metrics (a radar of two axes is a line)."""
    metrics = [m.metric for m in board.metrics if m.primary]
    if len(metrics) < 3:
        return None
    count = len(metrics)
    axes = []
    for i, metric in enumerate(metrics):
        x, y = _point(i, count, 1.0)
        lx, ly = _point(i, count, 1.12)
        anchor = "middle" if abs(lx - SIZE / 2) < 8 else "start" if lx > SIZE / 2 else "end"
        axes.append(Axis(metric=metric, x=x, y=y, label_x=lx, label_y=ly, anchor=anchor))
    rings = [
        " ".join(f"{x:.1f},{y:.1f}" for x, y in (_point(i, count, r) for i in range(count)))
        for r in (0.25, 0.5, 0.75, 1.0)
    ]
    polygons = []
    for n, entry in enumerate(board.entries):
        values = [entry.pass_rates.get(m) or 0.0 for m in metrics]
        points = " ".join(
            f"{x:.1f},{y:.1f}" for x, y in (_point(i, count, v) for i, v in enumerate(values))
        )
        polygons.append(Polygon(target=entry.target, points=points, series=n % SERIES))
    return Radar(axes=axes, rings=rings, polygons=polygons)


def bars(board: Leaderboard) -> list[MetricBars]:
    """Per primary metric, each target's pass rate as a bar."""
    out = []
    for info in board.metrics:
        if not info.primary:
            continue
        out.append(
            MetricBars(
                metric=info.metric,
                bars=[
                    Bar(
                        target=e.target,
                        value=e.pass_rates.get(info.metric),
                        width=BAR_WIDTH * (e.pass_rates.get(info.metric) or 0.0),
                        series=n % SERIES,
                    )
                    for n, e in enumerate(board.entries)
                ],
            )
        )
    return out
