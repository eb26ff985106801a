"""Chart geometry of the HTML reports, computed in Python before any template sees it."""

from __future__ import annotations

import pytest

from evalrunner.evaluators.base import MetricResult
from evalrunner.reports.model import MetricDelta, MetricInfo, MetricStats
from evalrunner.reports.views import charts, palette
from evalrunner.reports.views.formatting import coord

FAITH = MetricInfo(
    metric="Faithfulness", evaluator="Faithfulness", primary=True, threshold=0.7,
    higher_is_better=True,
)  # fmt: skip


def result(score: float | None, status: str = "scored") -> MetricResult:
    return MetricResult(
        evaluator="Faithfulness",
        metric="Faithfulness",
        status=status,  # type: ignore[arg-type]
        score=score,
        success=None if score is None else score >= 0.7,
        threshold=0.7,
        reason="r",
    )


def shapes(chart: charts.Chart, kind: type, cls: str | None = None) -> list:
    flat = []
    for s in chart.shapes:
        flat += list(s.shapes) if isinstance(s, charts.Group) else [s]
    return [s for s in flat if isinstance(s, kind) and (cls is None or cls in s.cls.split())]


def test_histogram_bins_stack_pass_over_fail_and_mark_the_threshold() -> None:
    results = [result(x) for x in (0.05, 0.05, 0.65, 0.75, 0.95, 1.0)]
    results += [result(None, "skipped"), result(float("nan"))]  # neither is plotted
    hist = charts.histogram(FAITH, results, None)
    assert hist.n == 6 and hist.average == pytest.approx(3.45 / 6)
    bins = shapes(hist.chart, charts.Rect, "bin")
    # 10 bins over [0, 1], 27 px each (300 − 34 − 10 = 256 / 10 = 25.6 wide, 2 px gap)
    counts = {(round(b.x, 1), b.fill): int(b.title.split(": ")[1].split()[0]) for b in bins}
    assert counts == {
        (35.0, palette.FAIL): 2,  # 0.0–0.1
        (188.6, palette.FAIL): 1,  # 0.6–0.7
        (214.2, palette.PASS): 1,  # 0.7–0.8
        (265.4, palette.PASS): 2,  # 0.9–1 (1.0 falls in the last bin)
    }
    tallest = max(b.height for b in bins)
    assert tallest == pytest.approx(110)  # the plot's height: the peak bin fills it
    (threshold,) = shapes(hist.chart, charts.Line, "threshold")
    assert threshold.x1 == pytest.approx(34 + 256 * 0.7)


def test_metric_bars_segments_fill_the_bar_and_the_average_sits_on_the_track() -> None:
    stats = MetricStats(
        metric="Faithfulness", evaluator="Faithfulness", primary=True, threshold=0.7,
        higher_is_better=True, average=0.5, pass_rate=0.5, count=6, skipped=2, errored=2,
        min=0.0, max=1.0,
    )  # fmt: skip
    chart = charts.metric_bars([FAITH], {charts.key(FAITH): stats})
    assert chart is not None
    segments = shapes(chart, charts.Rect, "seg")
    assert [s.fill for s in segments] == [palette.PASS, palette.FAIL, palette.ERROR, palette.SKIP]
    assert sum(s.width for s in segments) == pytest.approx(330)  # the whole bar
    # judged 8 (6 scored + 2 errors): 4 passed, 2 failed, 2 errors, and 2 skipped: 10 in all
    assert [round(s.width) for s in segments] == [132, 66, 66, 66]
    (dot,) = shapes(chart, charts.Circle)
    assert dot.fill == palette.FAIL  # 0.5 misses ≥ 0.7
    assert dot.cx == pytest.approx(230 + 330 + 190 + 10 + 220 * 0.5)


def test_heatmap_cells_take_the_palette_ramp_and_turn_long_column_names() -> None:
    rows = [charts.HeatRow("c1", "tip 1", "case-1"), charts.HeatRow("c2", "tip 2")]
    cells = [
        [charts.HeatCell(1.0, "1", "a"), charts.HeatCell(None, "", "b")],
        [charts.HeatCell(0.0, "0", "c"), charts.HeatCell(0.5, "0.5", "d")],
    ]
    chart = charts.heatmap(["short", "a column name much too long to fit"], rows, cells, "x")
    fills = [r.fill for r in shapes(chart, charts.Rect, "hm-cell")]
    assert fills == [palette.PASS.lower(), palette.SKIP, palette.FAIL.lower(), "#f4f1ea"]
    heads = shapes(chart, charts.Text, "colhead")
    assert all(h.rotate == -35 for h in heads)  # one does not fit: all are turned
    links = [s.href for s in chart.shapes if isinstance(s, charts.Group) and s.title]
    assert links == ["#case-1", None]


def test_interval_is_symmetric_around_zero() -> None:
    delta = MetricDelta(
        metric="m", evaluator="e", higher_is_better=True, baseline_average=0.9,
        current_average=0.6, delta=-0.3, ci_low=-0.4, ci_high=-0.2, significant=True,
        worse=True,
    )  # fmt: skip
    chart = charts.interval(delta, span=0.4)
    axis, ci = shapes(chart, charts.Line)
    assert axis.x1 == 85 and ci.x1 == pytest.approx(8) and ci.stroke == palette.FAIL
    (dot,) = shapes(chart, charts.Circle)
    assert dot.cx == pytest.approx(85 - 77 * 0.75)


@pytest.mark.parametrize(("value", "text"), [(230, "230"), (85.0, "85"), (12.345, "12.3")])
def test_coordinates_are_written_short(value: float, text: str) -> None:
    assert coord(value) == text
