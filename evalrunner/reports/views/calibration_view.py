"""The calibration page (calibration.html): per metric, its agreement with the human verdicts
and a score-vs-label strip plot. Geometry here, the template only writes the shapes out."""

from __future__ import annotations

from typing import Any

from evalrunner.calibrate.agreement import Calibration, MetricAgreement
from evalrunner.reports.views import palette
from evalrunner.reports.views.charts import Chart, Circle, Line, Text, scale_range
from evalrunner.reports.views.formatting import comparator, score

_W, _H, _LEFT, _RIGHT = 560.0, 118.0, 92.0, 16.0
_ROWS = {True: 34.0, False: 74.0}  # human pass above, human fail below
_JITTER = (0.0, -6.0, 6.0, -11.0, 11.0)  # deterministic: points on one score spread out


def strip_plot(m: MetricAgreement) -> Chart:
    """Every compared row: x its score, the row its human verdict, colour the human verdict;
    dashed the run's threshold, solid the suggested one."""
    extra = [m.threshold] + ([m.best_threshold] if m.best_threshold is not None else [])
    lo, hi = scale_range([s for s, _ in m.points], extra)

    def x(value: float) -> float:
        return _LEFT + (value - lo) / (hi - lo) * (_W - _LEFT - _RIGHT)

    chart = Chart(width=_W, height=_H, label=f"{m.metric}: score by human verdict", cls="chart")
    for verdict, y in _ROWS.items():
        chart.shapes.append(
            Text(
                x=_LEFT - 8,
                y=y + 4,
                text=f"human {'pass' if verdict else 'fail'}",
                anchor="end",
                cls="axis",
            )
        )
        chart.shapes.append(Line(x1=_LEFT, x2=_W - _RIGHT, y1=y, y2=y, stroke=palette.GRID))
    seen: dict[tuple[float, bool], int] = {}
    for value, human in m.points:
        n = seen.get((value, human), 0)
        seen[(value, human)] = n + 1
        chart.shapes.append(
            Circle(
                cx=x(value),
                cy=_ROWS[human] + _JITTER[n % len(_JITTER)],
                r=4.0,
                fill=palette.PASS if human else palette.FAIL,
                title=f"score {score(value)}, human {'pass' if human else 'fail'}",
            )
        )
    top, bottom = 12.0, _H - 22.0
    chart.shapes.append(
        Line(
            x1=x(m.threshold),
            x2=x(m.threshold),
            y1=top,
            y2=bottom,
            stroke=palette.MUTED,
            dash="4 3",
            title=f"run threshold {comparator(m.higher_is_better)} {score(m.threshold)}",
        )
    )
    if m.best_threshold is not None:
        chart.shapes.append(
            Line(
                x1=x(m.best_threshold),
                x2=x(m.best_threshold),
                y1=top,
                y2=bottom,
                stroke=palette.GOOD,
                width=2.0,
                title=f"suggested {comparator(m.higher_is_better)} {score(m.best_threshold)}",
            )
        )
    for value in (lo, hi):
        chart.shapes.append(
            Text(x=x(value), y=_H - 6, text=score(value), anchor="middle", cls="axis")
        )
    return chart


def calibration_context(result: Calibration) -> dict[str, Any]:
    return {
        "title": f"Calibration · {result.source}",
        "result": result,
        "rows": [(m, strip_plot(m)) for m in result.metrics],
    }
