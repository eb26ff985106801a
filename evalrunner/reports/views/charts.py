"""Chart geometry of the HTML reports: every SVG coordinate, bar width, histogram bin and
heatmap cell is computed here, as plain shapes; ``templates/charts.html.j2`` only writes them
out (and escapes their texts, which come from the run).

A chart is a :class:`Chart` holding :class:`Rect`, :class:`Line`, :class:`Circle`,
:class:`Text` and :class:`Group` shapes in drawing order.
"""

from __future__ import annotations

import itertools
import math
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from evalrunner.evaluators.base import MetricResult
from evalrunner.reports.model import Leaderboard, MetricDelta, MetricInfo, MetricStats
from evalrunner.reports.views import palette
from evalrunner.reports.views.formatting import chars, comparator, pct, score, short

Key = tuple[str, str]  # (evaluator, metric): two evaluators may name a metric alike


@dataclass(frozen=True)
class Span:
    """A ``<tspan>`` of a text."""

    text: str
    cls: str = ""
    dx: float | None = None


@dataclass(frozen=True)
class Text:
    x: float
    y: float
    text: str = ""
    anchor: str | None = "start"
    cls: str = ""
    fill: str | None = None
    #: Turned by this many degrees around (x, y).
    rotate: float | None = None
    title: str | None = None
    spans: tuple[Span, ...] = ()
    kind: str = "text"


@dataclass(frozen=True)
class Rect:
    x: float
    y: float
    width: float
    height: float
    fill: str
    cls: str = ""
    rx: float | None = None
    title: str | None = None
    kind: str = "rect"


@dataclass(frozen=True)
class Line:
    x1: float
    x2: float
    y1: float
    y2: float
    stroke: str
    cls: str = ""
    width: float | None = None
    dash: str | None = None
    cap: str | None = None
    title: str | None = None
    kind: str = "line"


@dataclass(frozen=True)
class Circle:
    cx: float
    cy: float
    r: float
    fill: str
    stroke: str | None = None
    stroke_width: float | None = None
    title: str | None = None
    kind: str = "circle"


Shape = Text | Rect | Line | Circle


@dataclass(frozen=True)
class Group:
    """Shapes sharing one tooltip, optionally a link to an anchor of the page."""

    shapes: tuple[Shape, ...]
    title: str | None = None
    href: str | None = None
    kind: str = "group"


@dataclass
class Chart:
    """One ``<svg>``: its size, accessible label, class and shapes."""

    width: float
    height: float
    label: str
    cls: str = "chart"
    shapes: list[Shape | Group] = field(default_factory=list)


def key(info: MetricInfo | MetricStats | MetricResult | MetricDelta) -> Key:
    return (info.evaluator, info.metric)


def meets(value: float, info: MetricInfo) -> bool:
    return value >= info.threshold if info.higher_is_better else value <= info.threshold


def scale_range(values: Iterable[float], extra: Iterable[float] = ()) -> tuple[float, float]:
    """[0, 1] unless the values (or the threshold) fall outside it."""
    every = [v for v in [*values, *extra] if v is not None and math.isfinite(v)]
    lo = min([0.0, *every])
    hi = max([1.0, *every])
    return lo, hi if hi > lo else lo + 1


def _threshold_tip(info: MetricInfo) -> str:
    return f"threshold {comparator(info.higher_is_better)} {score(info.threshold)}"


def metric_bars(metrics: Sequence[MetricInfo], stats: dict[Key, MetricStats]) -> Chart | None:
    """Per metric: a stacked bar of pass / fail / error / skipped over its results, and the
    average on a score track against the threshold (the marker), arrow giving direction."""
    if not metrics:
        return None
    label_w, bar_w, text_w, track_w = 230, 330, 190, 220
    row_h, top = 34, 26
    width = label_w + bar_w + text_w + track_w + 20
    height = top + row_h * len(metrics) + 8
    track_x = label_w + bar_w + text_w + 10
    chart = Chart(width, height, "pass rate and average per metric", "chart bars")
    shapes = chart.shapes
    shapes += [
        Text(label_w, 16, "results: pass / fail / error / skipped", cls="axis"),
        Text(track_x, 16, "average score vs threshold", cls="axis"),
    ]
    for i, info in enumerate(metrics):
        s = stats.get(key(info))
        y = top + i * row_h
        cy = y + row_h / 2
        name = short(info.metric, chars(label_w - 24, 12.5))
        arrow = "↑" if info.higher_is_better else "↓"
        label = Text(
            0, cy + 4, f"{arrow} {name}", cls="label" + (" strong" if info.primary else "")
        )
        title = (
            f"{info.metric} ({info.evaluator}): "
            f"{'higher' if info.higher_is_better else 'lower'} is better, " + _threshold_tip(info)
        )
        shapes.append(Group((label,), title=title))
        if i:
            shapes.append(Line(0, width, y, y, palette.GRID))
        if s is None:
            shapes.append(Text(label_w, cy + 4, "not evaluated", cls="muted"))
            continue
        judged = s.count + s.errored
        passed = round((s.pass_rate or 0.0) * judged)
        failed = max(0, s.count - passed)
        total = judged + s.skipped
        x = float(label_w)
        segments = (
            (passed, palette.PASS, "passed"),
            (failed, palette.FAIL, "failed"),
            (s.errored, palette.ERROR, "evaluator error"),
            (s.skipped, palette.SKIP, "skipped"),
        )
        shapes.append(Rect(label_w, cy - 8, bar_w, 16, palette.TRACK, rx=2))
        for n, colour, what in segments:
            if not n or not total:
                continue
            w = bar_w * n / total
            tip = f"{info.metric}: {n:,} {what} of {total:,}"
            shapes.append(Rect(x, cy - 8, w, 16, colour, cls="seg", title=tip))
            x += w
        rate = pct(s.pass_rate) if s.pass_rate is not None else "no score"
        detail = (
            f"{passed:,}/{judged:,}"
            if judged
            else (f"{s.skipped:,} skipped" if s.skipped else "no result")
        )
        shapes.append(
            Text(
                label_w + bar_w + 10,
                cy + 4,
                anchor=None,
                spans=(Span(rate, "value"), Span(detail, "muted", dx=8)),
            )
        )
        lo, hi = scale_range([s.min or 0.0, s.max or 0.0], [info.threshold])

        def pos(v: float, lo: float = lo, hi: float = hi) -> float:
            return track_x + track_w * (v - lo) / (hi - lo)

        shapes.append(
            Line(track_x, track_x + track_w, cy, cy, palette.TRACK_LINE, width=4, cap="round")
        )
        tx = pos(info.threshold)
        shapes.append(
            Line(tx, tx, cy - 10, cy + 10, palette.INK, cls="threshold", width=2,
                 title=_threshold_tip(info))
        )  # fmt: skip
        if s.average is not None:
            ok = meets(s.average, info)
            shapes.append(
                Circle(
                    pos(s.average),
                    cy,
                    6,
                    palette.PASS if ok else palette.FAIL,
                    stroke="#fff",
                    stroke_width=1.5,
                    title=f"average {score(s.average)} ({'meets' if ok else 'misses'} "
                    + _threshold_tip(info)
                    + ")",
                )
            )
    return chart


@dataclass
class Histogram:
    """One metric's score distribution: the chart, the number of scores and their average."""

    metric: str
    n: int
    average: float | None
    chart: Chart


def histogram(
    info: MetricInfo, results: Sequence[MetricResult], stats: MetricStats | None
) -> Histogram:
    """Small histogram of one metric's scores over every case × iteration; the bars stack the
    passing (blue) and failing (vermillion) results; the dashed line is the threshold."""
    scored = [
        r
        for r in results
        if r.status == "scored" and r.score is not None and math.isfinite(r.score)
    ]
    values = [r.score for r in scored if r.score is not None]
    lo, hi = scale_range(values, [info.threshold])
    bins = 10 if (lo, hi) == (0.0, 1.0) else 12
    passed = [0] * bins
    failed = [0] * bins
    for r in scored:
        assert r.score is not None
        b = min(bins - 1, max(0, int((r.score - lo) / (hi - lo) * bins)))
        (passed if r.success else failed)[b] += 1
    peak = max([p + f for p, f in zip(passed, failed, strict=True)] + [1])
    w, h, left, right, top, bottom = 300, 150, 34, 10, 14, 26
    pw, ph = w - left - right, h - top - bottom
    chart = Chart(w, h, f"score distribution of {info.metric}")
    shapes = chart.shapes
    shapes += [
        Line(left, w - right, top + ph, top + ph, palette.MUTED),
        Text(left - 4, top + 8, str(peak), anchor="end", cls="axis"),
        Text(left - 4, top + ph, "0", anchor="end", cls="axis"),
        Text(left, h - 8, score(lo), cls="axis"),
        Text(left + pw / 2, h - 8, score((lo + hi) / 2), anchor="middle", cls="axis"),
        Text(w - right, h - 8, score(hi), anchor="end", cls="axis"),
    ]
    bw = pw / bins
    for b in range(bins):
        x = left + b * bw + 1
        b_lo, b_hi = lo + (hi - lo) * b / bins, lo + (hi - lo) * (b + 1) / bins
        base: float = top + ph
        for n, colour, what in (
            (passed[b], palette.PASS, "passed"),
            (failed[b], palette.FAIL, "failed"),
        ):
            if not n:
                continue
            bh = ph * n / peak
            base -= bh
            tip = f"{score(b_lo)}–{score(b_hi)}: {n:,} {what}"
            shapes.append(Rect(x, base, bw - 2, bh, colour, cls="bin", title=tip))
    tx = left + pw * (info.threshold - lo) / (hi - lo)
    shapes.append(
        Line(tx, tx, top - 4, top + ph, palette.INK, cls="threshold", width=1.5, dash="4 3",
             title=_threshold_tip(info))
    )  # fmt: skip
    anchor = "end" if tx > left + pw * 0.7 else "start"
    shapes.append(
        Text(
            tx + (-4 if anchor == "end" else 4),
            top + 4,
            f"{comparator(info.higher_is_better)} {score(info.threshold)}",
            anchor=anchor,
            cls="axis",
        )
    )
    average = stats.average if stats else (statistics.fmean(values) if values else None)
    return Histogram(info.metric, len(values), average, chart)


@dataclass(frozen=True)
class HeatRow:
    """A heatmap row: its label, tooltip and the anchor it links to (or None)."""

    label: str
    tip: str
    link: str | None = None


@dataclass(frozen=True)
class HeatCell:
    """A heatmap cell: pass share (None: no score), the text in it, its tooltip."""

    share: float | None
    text: str
    tip: str


def heatmap(
    columns: Sequence[str],
    rows: Sequence[HeatRow],
    cells: Sequence[Sequence[HeatCell]],
    label: str,
) -> Chart:
    """A grid of cells coloured by pass share; column names that do not fit are turned."""
    label_w = 220
    n = max(1, len(columns))
    cell_w = max(34.0, min(150.0, (1000 - label_w) / n))
    cell_h = 18
    fits = all(len(c) <= chars(cell_w - 6, 11) for c in columns)
    # column names that do not fit are turned 35°: room above and to the right for them
    longest = max([len(short(c, 28)) for c in columns] + [1]) * 6.4
    head_h = 26.0 if fits else 18 + longest * 0.574
    pad = 8.0 if fits else max(8.0, longest * 0.82 - cell_w / 2 + 8)
    width = label_w + cell_w * n + pad
    height = head_h + cell_h * len(rows) + 4
    chart = Chart(width, height, label, "chart heatmap")
    shapes = chart.shapes
    for j, name in enumerate(columns):
        x = label_w + cell_w * j + cell_w / 2
        if fits:
            shapes.append(Text(x, head_h - 9, name, anchor="middle", cls="colhead"))
        else:
            shapes.append(
                Text(x + 4, head_h - 6, short(name, 28), anchor=None, cls="colhead", rotate=-35,
                     title=name)
            )  # fmt: skip
    for i, (row, row_cells) in enumerate(zip(rows, cells, strict=True)):
        y = head_h + i * cell_h
        text = Text(label_w - 8, y + cell_h - 5, short(row.label, 32), anchor="end", cls="rowhead")
        shapes.append(Group((text,), title=row.tip, href=f"#{row.link}" if row.link else None))
        for j, cell in enumerate(row_cells):
            x = label_w + cell_w * j
            fill = palette.SKIP if cell.share is None else palette.share_colour(cell.share)
            colour = palette.INK if cell.share is None else palette.text_on_share(cell.share)
            parts: list[Shape] = [
                Rect(x + 1, y + 1, cell_w - 2, cell_h - 2, fill, cls="hm-cell", title=cell.tip)
            ]
            if cell.text and cell_w >= 34:
                parts.append(
                    Text(x + cell_w / 2, y + cell_h - 5, cell.text, anchor="middle", cls="cell",
                         fill=colour)
                )  # fmt: skip
            shapes.append(Group(tuple(parts)))
    return chart


def ramp() -> list[str]:
    """The pass-share legend: 11 colours from 0% to 100%."""
    return [palette.share_colour(s / 10) for s in range(11)]


def interval(delta: MetricDelta, span: float) -> Chart:
    """The delta and its 95% interval on a symmetric axis around 0 (tiny forest plot)."""
    w, h = 170, 20
    mid = w / 2

    def x(v: float) -> float:
        return mid + (w / 2 - 8) * max(-1.0, min(1.0, v / span))

    if delta.worse:
        colour = palette.FAIL
    else:
        colour = palette.PASS if delta.significant else palette.MUTED
    chart = Chart(w, h, f"delta of {delta.metric} with 95% interval", "chart ci")
    chart.shapes.append(Line(mid, mid, 2, h - 2, palette.MUTED))
    if delta.ci_low is not None and delta.ci_high is not None:
        chart.shapes.append(
            Line(x(delta.ci_low), x(delta.ci_high), h / 2, h / 2, colour, width=3, cap="round")
        )
    if delta.delta is not None:
        chart.shapes.append(Circle(x(delta.delta), h / 2, 4.5, colour))
    return chart


def leader_bars(board: Leaderboard, info: MetricInfo) -> Chart:
    """Average of each target on one metric against the threshold; the best is marked ★."""
    label_w, bar_w, row_h = 170, 190, 22
    entries = board.entries
    height = row_h * len(entries) + 6
    best = board.best_per_metric.get(info.metric)
    values = [e.averages.get(info.metric) for e in entries]
    lo, hi = scale_range([v for v in values if v is not None], [info.threshold])
    chart = Chart(label_w + bar_w + 60, height, f"average by target, {info.metric}")
    shapes = chart.shapes
    for i, entry in enumerate(entries):
        y = i * row_h + 3
        avg = entry.averages.get(info.metric)
        is_best = entry.target == best
        shapes.append(
            Text(label_w - 8, y + 14, short(entry.target, 26), anchor="end",
                 cls="label" + (" strong" if is_best else ""))
        )  # fmt: skip
        shapes.append(Rect(label_w, y + 3, bar_w, 14, palette.TRACK))
        if avg is not None:
            ok = meets(avg, info)
            if is_best:
                colour = palette.PASS if ok else palette.FAIL
            else:
                colour = palette.PASS_LIGHT if ok else palette.FAIL_LIGHT
            tip = (
                f"{entry.target} · {info.metric}: average {score(avg)}, "
                f"pass rate {pct(entry.pass_rates.get(info.metric))}"
            )
            shapes.append(
                Rect(label_w, y + 3, bar_w * (avg - lo) / (hi - lo), 14, colour, cls="lb-bar",
                     title=tip)
            )  # fmt: skip
        shapes.append(
            Text(label_w + bar_w + 6, y + 14, score(avg) + (" ★" if is_best else ""), cls="value")
        )
    tx = label_w + bar_w * (info.threshold - lo) / (hi - lo)
    shapes.append(
        Line(tx, tx, 2, height - 2, palette.INK, cls="threshold", width=1.5, dash="3 2",
             title=_threshold_tip(info))
    )  # fmt: skip
    return chart


@dataclass(frozen=True)
class TrendPoint:
    """One run on a metric's trend line."""

    value: float | None
    title: str
    href: str
    #: the run was a regression on this metric
    regressed: bool = False
    #: the run's label under the x axis, one or two short lines (its start day and time)
    label: tuple[str, ...] = ()


#: A trend chart is drawn at least this wide (px), so a page's content width is filled on
#: a desktop (the svg then stretches a little, never much) and the run labels never crowd;
#: a narrower window scrolls it sideways at this size rather than shrinking its text.
TREND_MIN_WIDTH = 960.0


def trend(metric: str, points: Sequence[TrendPoint], info: MetricInfo) -> Chart:
    """A metric's average over runs (oldest left): a line through the scored runs, the
    threshold dashed, each run a dot linking to its report, coloured by whether its average
    meets the threshold, and a regression marked with ▼ above its dot. The x axis names
    each run (:attr:`TrendPoint.label`)."""
    step = 56.0
    left, right, top = 44.0, 20.0, 18.0
    lines = max((len(p.label) for p in points), default=0)
    bottom = 16.0 + 13.0 * lines
    width = max(TREND_MIN_WIDTH, left + right + step * max(len(points) - 1, 1))
    if len(points) > 1:
        step = (width - left - right) / (len(points) - 1)
    height = 148.0 + bottom
    plot_h = height - top - bottom
    lo, hi = scale_range([p.value for p in points if p.value is not None], [info.threshold])

    def y(v: float) -> float:
        return top + (hi - v) / (hi - lo) * plot_h

    def x(i: int) -> float:
        return left + (i * step if len(points) > 1 else (width - left - right) / 2)

    chart = Chart(width, height, f"{metric} over {len(points)} runs", cls="chart trend")
    for v in (lo, hi):
        chart.shapes += [
            Line(left, width - right, y(v), y(v), palette.GRID),
            Text(left - 6, y(v) + 4, score(v), anchor="end", cls="axis"),
        ]
    ty = y(info.threshold)
    chart.shapes.append(
        Line(left, width - right, ty, ty, palette.INK, cls="threshold", width=1.2, dash="4 3",
             title=_threshold_tip(info))
    )  # fmt: skip
    scored = [(i, p.value) for i, p in enumerate(points) if p.value is not None]
    for (i, a), (j, b) in itertools.pairwise(scored):
        chart.shapes.append(Line(x(i), x(j), y(a), y(b), palette.MUTED, width=1.5))
    for i, p in enumerate(points):
        if p.value is None:
            continue
        colour = palette.PASS if meets(p.value, info) else palette.FAIL
        shapes: list[Shape] = [Circle(x(i), y(p.value), 5, colour, stroke=palette.CARD)]
        if p.regressed:
            shapes.append(
                Text(x(i), y(p.value) - 9, "▼", anchor="middle", cls="regression",
                     fill=palette.FAIL)
            )  # fmt: skip
        chart.shapes.append(Group(tuple(shapes), title=p.title, href=p.href))
    axis_y = height - bottom + 14.0
    for i, p in enumerate(points):
        chart.shapes += [
            Text(x(i), axis_y + 13.0 * n, line, anchor="middle", cls="axis run", title=p.title)
            for n, line in enumerate(p.label)
        ]
    return chart
