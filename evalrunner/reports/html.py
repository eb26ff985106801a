"""report.html and the leaderboard page: each ONE self-contained HTML file.

Everything is inline: the CSS, the charts (SVG drawn here, in Python), and a few lines of
vanilla JavaScript (sortable tables, open every collapsible section before printing). No
library, no CDN, no font or image fetched: the file reads the same offline, attached to a
ticket, or years later.

Every string that comes from the run (questions, answers, contexts, reasons, case ids, metric
and target names, the configuration) is untrusted and goes through :func:`_e`, which escapes
it for text and attribute context alike. As a second line of defence, a Content-Security-Policy
forbids any network fetch and any script but the page's own (pinned by its hash), so a
forgotten escape still could not run an injected script or handler.

Section order of the run report, most decisive first: verdict, regression against the
baseline, gates, problems and insights, metrics (pass rate against threshold), score
distributions, the case × metric heatmap, the worst cases with their details, run-level
figures, configuration.
"""

from __future__ import annotations

import base64
import hashlib
import html
import itertools
import json
import math
import re
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from evalrunner.evaluators.base import MetricResult
from evalrunner.reports.model import (
    CaseFlip,
    CaseRow,
    Insight,
    Leaderboard,
    MetricDelta,
    MetricInfo,
    MetricStats,
    Problem,
    Regression,
    ReportData,
)

__all__ = ["render_leaderboard", "render_report"]

#: How many of the worst cases get a full card (question, answers, contexts, reasons).
WORST_CASES = 15
#: How many of them are shown open; the others are one line each until clicked.
WORST_OPEN = 5
#: Rows of the case × metric heatmap (worst first); the rest is counted in a note.
HEATMAP_ROWS = 200
#: Rows of the difficult-case × target heatmap of the leaderboard.
LEADERBOARD_ROWS = 100
#: Affected case ids listed per problem / insight before "and N more".
AFFECTED_SHOWN = 12
#: Cases listed among new failures / fixed cases before "and N more".
FLIPS_SHOWN = 40
#: Lines of the verdict banner, and characters per line; the sections below have it all.
BANNER_LINES = 5
BANNER_CHARS = 180
#: Character limits of the untrusted texts shown in the worst-case cards.
TEXT_LIMIT = 3000
CONTEXT_LIMIT = 1500
CONTEXTS_SHOWN = 8
REASON_LIMIT = 800
JSON_LIMIT = 20_000

# Okabe–Ito, a palette that stays distinct under the common colour-vision deficiencies;
# pass / fail are blue / vermillion (never red / green), and every colour has a text label.
PASS = "#0072B2"
FAIL = "#D55E00"
ERROR = "#CC79A7"
SKIP = "#D4D4D8"
WARN = "#E69F00"
GOOD = "#007A5E"
MUTED = "#6B7280"
INK = "#1F2937"
GRID = "#E5E7EB"
_SHARE_STOPS = ((0.0, (213, 94, 0)), (0.5, (244, 241, 234)), (1.0, (0, 114, 178)))

Key = tuple[str, str]  # (evaluator, metric): two evaluators may name a metric alike


# --- text helpers ---------------------------------------------------------------------------

_UNSAFE_CHARS = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ud800-\udfff]")


def _e(value: Any) -> str:
    """Untrusted value -> HTML text safe in element content and quoted attributes. Control
    characters and lone surrogates (which HTML forbids / UTF-8 cannot encode) become U+FFFD."""
    text = "" if value is None else str(value)
    return html.escape(_UNSAFE_CHARS.sub("\ufffd", text), quote=True)


def _clip(value: str | None, limit: int) -> str:
    """Escaped text cut at ``limit`` characters, saying how much was left out."""
    if value is None:
        return '<span class="none">—</span>'
    if value == "":
        return '<span class="none">(empty)</span>'
    if len(value) <= limit:
        return _e(value)
    rest = len(value) - limit
    return f'{_e(value[:limit])}<span class="more">… ({rest:,} more characters)</span>'


def _short(value: str, width: int) -> str:
    """Plain (unescaped) text shortened to ``width`` characters with an ellipsis."""
    value = " ".join(value.split())
    return value if len(value) <= width else value[: max(1, width - 1)] + "…"


def _score(x: Any) -> str:
    """A score or any number, short; "—" for nothing (or for what is not a number)."""
    try:
        x = float(x)
    except (TypeError, ValueError):
        return "—"
    if not math.isfinite(x):
        return "—"
    if abs(x) >= 100:
        return f"{x:,.0f}"
    if abs(x) >= 10:
        return f"{x:.1f}"
    return f"{x:.3f}".rstrip("0").rstrip(".") if x != 0 else "0"


def _pct(x: float | None) -> str:
    if x is None or not math.isfinite(x):
        return "—"
    v = x * 100
    return f"{v:.0f}%" if abs(v - round(v)) < 0.05 else f"{v:.1f}%"


def _ms(x: float | None) -> str:
    if x is None or not math.isfinite(x):
        return "—"
    return f"{x / 1000:.2f} s" if x >= 1000 else f"{x:.0f} ms"


def _int(x: int | float | None) -> str:
    return "—" if x is None else f"{int(x):,}"


def _money(x: float | None) -> str:
    if x is None or not math.isfinite(x):
        return "—"
    return f"${x:,.2f}" if x >= 100 else f"${x:,.4f}"


def _signed(x: float | None) -> str:
    if x is None or not math.isfinite(x):
        return "—"
    return ("+" if x > 0 else "−" if x < 0 else "±") + _score(abs(x))


def _dv(x: float | int | None) -> str:
    """A number for the ``data-v`` sort key of a table cell."""
    return "" if x is None else f"{x:.6g}"


def _num_td(value: float | int | None, text: str, cls: str = "num") -> str:
    return f'<td class="{cls}" data-v="{_dv(value)}">{text}</td>'


def _plural(n: int, word: str, many: str | None = None) -> str:
    return f"{n:,} {word if n == 1 else (many or word + 's')}"


def _key(info: MetricInfo | MetricStats | MetricResult | MetricDelta) -> Key:
    return (info.evaluator, info.metric)


def _cmp(info: MetricInfo | MetricStats) -> str:
    return "≥" if info.higher_is_better else "≤"


def _share_colour(share: float) -> str:
    share = min(1.0, max(0.0, share))
    for (a, ca), (b, cb) in itertools.pairwise(_SHARE_STOPS):
        if share <= b:
            t = (share - a) / (b - a)
            r, g, bl = (round(x + (y - x) * t) for x, y in zip(ca, cb, strict=True))
            return f"#{r:02x}{g:02x}{bl:02x}"
    return "#0072b2"


def _on(share: float) -> str:
    """Text colour readable on :func:`_share_colour`."""
    return "#ffffff" if abs(share - 0.5) > 0.3 else INK


def _chars(px: float, size: float = 12) -> int:
    """How many characters of a label fit in ``px`` at font size ``size`` (an estimate)."""
    return max(3, int(px / (size * 0.58)))


def _duration(start: str, end: str) -> str | None:
    try:
        seconds = (datetime.fromisoformat(end) - datetime.fromisoformat(start)).total_seconds()
    except (TypeError, ValueError):
        return None
    if seconds < 0:
        return None
    if seconds < 60:
        return f"{seconds:.0f} s"
    if seconds < 3600:
        return f"{seconds // 60:.0f} min {seconds % 60:.0f} s"
    return f"{seconds // 3600:.0f} h {seconds % 3600 // 60:.0f} min"


def _percentile(values: Sequence[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    pos = q * (len(ordered) - 1)
    lo, hi = math.floor(pos), math.ceil(pos)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def _case_chips(ids: Sequence[str], shown: int = AFFECTED_SHOWN) -> str:
    if not ids:
        return ""
    chips = " ".join(f"<code>{_e(_short(c, 60))}</code>" for c in ids[:shown])
    rest = len(ids) - shown
    more = f' <span class="muted">and {rest:,} more</span>' if rest > 0 else ""
    return f'<div class="chips">{chips}{more}</div>'


# --- the run, aggregated per case -----------------------------------------------------------


@dataclass
class _Cell:
    """One case × metric over the case's iterations."""

    results: list[MetricResult] = field(default_factory=list)

    @property
    def scores(self) -> list[float]:
        return [r.score for r in self.results if r.status == "scored" and r.score is not None]

    @property
    def judged(self) -> int:
        return sum(1 for r in self.results if r.status in ("scored", "error"))

    @property
    def passed(self) -> int:
        return sum(1 for r in self.results if r.status == "scored" and r.success is True)

    @property
    def failed(self) -> bool:
        return any(
            r.status == "error" or (r.status == "scored" and r.success is False)
            for r in self.results
        )

    @property
    def share(self) -> float | None:
        return self.passed / self.judged if self.judged else None

    @property
    def mean(self) -> float | None:
        scores = self.scores
        return statistics.fmean(scores) if scores else None


@dataclass
class _Case:
    case_id: str
    order: int
    rows: list[CaseRow] = field(default_factory=list)
    cells: dict[Key, _Cell] = field(default_factory=dict)
    failing: list[Key] = field(default_factory=list)  # primary metrics failed at least once
    errored: bool = False  # the target or the task failed in some iteration
    share: float | None = None  # pass share over primary results
    goodness: float | None = None  # mean primary score, turned so that higher is better

    def cell(self, key: Key) -> _Cell:
        return self.cells.get(key) or _Cell()

    @property
    def badness(self) -> int:
        return len(self.failing) + (1 if self.errored else 0)

    def sort_key(self) -> tuple[float, float, float, int]:
        return (
            -self.badness,
            self.share if self.share is not None else -1.0,
            self.goodness if self.goodness is not None else -1.0,
            self.order,
        )


def _aggregate(rows: Sequence[CaseRow], primary: Sequence[MetricInfo]) -> list[_Case]:
    """Cases in run order, each with its iterations folded together."""
    cases: dict[str, _Case] = {}
    for row in rows:
        case = cases.get(row.case_id)
        if case is None:
            case = cases[row.case_id] = _Case(row.case_id, len(cases))
        case.rows.append(row)
        case.errored = case.errored or row.status != "ok"
        for result in row.results:
            case.cells.setdefault(_key(result), _Cell()).results.append(result)
    direction = {_key(m): m.higher_is_better for m in primary}
    for case in cases.values():
        case.rows.sort(key=lambda r: r.iteration)
        judged = passed = 0
        good: list[float] = []
        for key, higher in direction.items():
            cell = case.cell(key)
            if cell.failed:
                case.failing.append(key)
            judged += cell.judged
            passed += cell.passed
            mean = cell.mean
            if mean is not None:
                good.append(mean if higher else 1.0 - mean)
        case.share = passed / judged if judged else (0.0 if case.errored else None)
        case.goodness = statistics.fmean(good) if good else None
    return list(cases.values())


def _primary(metrics: Sequence[MetricInfo]) -> list[MetricInfo]:
    """The heatmap's and worst-case ranking's metrics: the primary ones (all, if none is)."""
    return [m for m in metrics if m.primary] or list(metrics)


def _split(metrics: Sequence[MetricInfo]) -> tuple[list[MetricInfo], list[MetricInfo]]:
    """(primary, the others); when no metric is primary, all are shown as the main ones."""
    primary = [m for m in metrics if m.primary]
    if not primary:
        return list(metrics), []
    return primary, [m for m in metrics if not m.primary]


def _ordered(metrics: Sequence[MetricInfo]) -> list[MetricInfo]:
    """Primary metrics first, otherwise in run order."""
    return [m for m in metrics if m.primary] + [m for m in metrics if not m.primary]


def _run_stats(data: ReportData) -> dict[Key, MetricStats]:
    return {_key(s): s for s in data.stats if s.iteration is None}


def _iteration_stats(data: ReportData) -> dict[Key, list[MetricStats]]:
    out: dict[Key, list[MetricStats]] = {}
    for s in sorted((s for s in data.stats if s.iteration is not None), key=lambda s: s.iteration):
        out.setdefault(_key(s), []).append(s)
    return out


# --- verdict --------------------------------------------------------------------------------


def _verdict(data: ReportData) -> tuple[str, str, list[str]]:
    """(tone, headline, reasons): tone is bad / warn / good / neutral."""
    reasons: list[str] = []
    regression = data.regression
    failed_gates = [g for g in data.gates if not g.passed]
    high = [p for p in data.problems if p.severity == "high"]
    scored = any(r.status == "scored" for row in data.rows for r in row.results)
    if regression is not None and regression.verdict == "regression":
        worse = [d.metric for d in regression.deltas if d.worse]
        reasons += list(regression.reasons) or [
            f"worse than baseline {regression.baseline_run_id} on {', '.join(worse) or '—'}"
        ]
    for gate in failed_gates:
        average = gate.average
        reasons.append(
            f"gate {gate.gate}: average {_score(average)} "
            f"against fail_under {_score(gate.threshold)}"
            if average is not None
            else f"gate {gate.gate}: no score (fail_under {_score(gate.threshold)})"
        )
    regressed = regression is not None and regression.verdict == "regression"
    # the regression problem repeats the regression's reasons: listed once
    reasons += [p.description for p in high if not (regressed and p.type == "regression")]
    if regressed:
        return "bad", "REGRESSION", reasons
    if failed_gates:
        return "bad", "GATES FAILED", reasons
    if high:
        return "warn", "NEEDS ATTENTION", reasons
    if not scored:
        return "neutral", "NO SCORES", ["no case was scored: see the problems below"]
    good = []
    if data.gates:
        good.append(f"all {_plural(len(data.gates), 'gate')} passed")
    if regression is not None:
        good.append(f"{regression.verdict} against baseline {regression.baseline_run_id}")
    others = [p for p in data.problems if p.severity != "high"]
    if others:
        good.append(f"{_plural(len(others), 'problem')} of medium or low severity")
    return "good", "PASSED", good or ["no gate failed, no high-severity problem"]


# --- SVG charts -----------------------------------------------------------------------------


def _svg(width: float, height: float, body: str, label: str, cls: str = "chart") -> str:
    return (
        f'<svg class="{cls}" xmlns="http://www.w3.org/2000/svg" role="img" '
        f'viewBox="0 0 {width:.0f} {height:.0f}" width="{width:.0f}" height="{height:.0f}" '
        f'aria-label="{_e(label)}">{body}</svg>'
    )


def _text(x: float, y: float, text: str, *, anchor: str = "start", cls: str = "") -> str:
    c = f' class="{cls}"' if cls else ""
    return f'<text x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}"{c}>{_e(text)}</text>'


def _scale_range(values: Iterable[float], extra: Iterable[float] = ()) -> tuple[float, float]:
    """[0, 1] unless the values (or the threshold) fall outside it."""
    every = [v for v in [*values, *extra] if v is not None and math.isfinite(v)]
    lo = min([0.0, *every])
    hi = max([1.0, *every])
    return lo, hi if hi > lo else lo + 1


def _metric_bars(metrics: Sequence[MetricInfo], stats: dict[Key, MetricStats]) -> str:
    """Per metric: a stacked bar of pass / fail / error / skipped over its results, and the
    average on a score track against the threshold (the marker), arrow giving direction."""
    if not metrics:
        return ""
    label_w, bar_w, text_w, track_w = 230, 330, 190, 220
    row_h, top = 34, 26
    width = label_w + bar_w + text_w + track_w + 20
    height = top + row_h * len(metrics) + 8
    track_x = label_w + bar_w + text_w + 10
    parts = [
        _text(label_w, 16, "results: pass / fail / error / skipped", cls="axis"),
        _text(track_x, 16, "average score vs threshold", cls="axis"),
    ]
    for i, info in enumerate(metrics):
        s = stats.get(_key(info))
        y = top + i * row_h
        cy = y + row_h / 2
        name = _short(info.metric, _chars(label_w - 24, 12.5))
        arrow = "↑" if info.higher_is_better else "↓"
        parts.append(
            f"<g><title>{_e(info.metric)} ({_e(info.evaluator)}): "
            f"{'higher' if info.higher_is_better else 'lower'} is better, threshold "
            f"{_cmp(info)} {_e(_score(info.threshold))}</title>"
            + _text(0, cy + 4, f"{arrow} {name}", cls="label" + (" strong" if info.primary else ""))
            + "</g>"
        )
        if i:
            parts.append(f'<line x1="0" x2="{width}" y1="{y:.1f}" y2="{y:.1f}" stroke="{GRID}"/>')
        if s is None:
            parts.append(_text(label_w, cy + 4, "not evaluated", cls="muted"))
            continue
        judged = s.count + s.errored
        passed = round((s.pass_rate or 0.0) * judged)
        failed = max(0, s.count - passed)
        total = judged + s.skipped
        x = float(label_w)
        segments = (
            (passed, PASS, "passed"),
            (failed, FAIL, "failed"),
            (s.errored, ERROR, "evaluator error"),
            (s.skipped, SKIP, "skipped"),
        )
        parts.append(
            f'<rect x="{label_w}" y="{cy - 8:.1f}" width="{bar_w}" height="16" rx="2" '
            f'fill="#F3F4F6"/>'
        )
        for n, colour, what in segments:
            if not n or not total:
                continue
            w = bar_w * n / total
            parts.append(
                f'<rect class="seg" x="{x:.1f}" y="{cy - 8:.1f}" width="{w:.1f}" height="16" '
                f'fill="{colour}"><title>{_e(info.metric)}: {n:,} {what} of {total:,}</title>'
                "</rect>"
            )
            x += w
        rate = _pct(s.pass_rate) if s.pass_rate is not None else "no score"
        detail = (
            f"{passed:,}/{judged:,}"
            if judged
            else (f"{s.skipped:,} skipped" if s.skipped else "no result")
        )
        parts.append(
            f'<text x="{label_w + bar_w + 10}" y="{cy + 4:.1f}"><tspan class="value">{rate}'
            f'</tspan><tspan class="muted" dx="8">{detail}</tspan></text>'
        )
        lo, hi = _scale_range([s.min or 0.0, s.max or 0.0], [info.threshold])
        pos = lambda v, lo=lo, hi=hi: track_x + track_w * (v - lo) / (hi - lo)  # noqa: E731
        parts.append(
            f'<line x1="{track_x}" x2="{track_x + track_w}" y1="{cy:.1f}" y2="{cy:.1f}" '
            f'stroke="#D1D5DB" stroke-width="4" stroke-linecap="round"/>'
        )
        tx = pos(info.threshold)
        parts.append(
            f'<line class="threshold" x1="{tx:.1f}" x2="{tx:.1f}" y1="{cy - 10:.1f}" '
            f'y2="{cy + 10:.1f}" stroke="{INK}" stroke-width="2"><title>threshold '
            f"{_cmp(info)} {_e(_score(info.threshold))}</title></line>"
        )
        if s.average is not None:
            meets = (
                s.average >= info.threshold
                if info.higher_is_better
                else s.average <= info.threshold
            )
            colour = PASS if meets else FAIL
            parts.append(
                f'<circle cx="{pos(s.average):.1f}" cy="{cy:.1f}" r="6" fill="{colour}" '
                f'stroke="#fff" stroke-width="1.5"><title>average {_e(_score(s.average))} '
                f"({'meets' if meets else 'misses'} threshold {_cmp(info)} "
                f"{_e(_score(info.threshold))})</title></circle>"
            )
    return _svg(width, height, "".join(parts), "pass rate and average per metric", "chart bars")


def _histogram(info: MetricInfo, results: Sequence[MetricResult], stats: MetricStats | None) -> str:
    """Small histogram of one metric's scores over every case × iteration; the bars stack the
    passing (blue) and failing (vermillion) results; the dashed line is the threshold."""
    scored = [r for r in results if r.status == "scored" and r.score is not None]
    values = [r.score for r in scored if r.score is not None and math.isfinite(r.score)]
    lo, hi = _scale_range(values, [info.threshold])
    bins = 10 if (lo, hi) == (0.0, 1.0) else 12
    passed = [0] * bins
    failed = [0] * bins
    for r in scored:
        if r.score is None or not math.isfinite(r.score):
            continue
        b = min(bins - 1, max(0, int((r.score - lo) / (hi - lo) * bins)))
        (passed if r.success else failed)[b] += 1
    peak = max([p + f for p, f in zip(passed, failed, strict=True)] + [1])
    w, h, left, right, top, bottom = 300, 150, 34, 10, 14, 26
    pw, ph = w - left - right, h - top - bottom
    parts = [
        f'<line x1="{left}" x2="{w - right}" y1="{top + ph}" y2="{top + ph}" stroke="{MUTED}"/>',
        _text(left - 4, top + 8, str(peak), anchor="end", cls="axis"),
        _text(left - 4, top + ph, "0", anchor="end", cls="axis"),
        _text(left, h - 8, _score(lo), cls="axis"),
        _text(left + pw / 2, h - 8, _score((lo + hi) / 2), anchor="middle", cls="axis"),
        _text(w - right, h - 8, _score(hi), anchor="end", cls="axis"),
    ]
    bw = pw / bins
    for b in range(bins):
        x = left + b * bw + 1
        b_lo, b_hi = lo + (hi - lo) * b / bins, lo + (hi - lo) * (b + 1) / bins
        base = top + ph
        for n, colour, what in ((passed[b], PASS, "passed"), (failed[b], FAIL, "failed")):
            if not n:
                continue
            bh = ph * n / peak
            base -= bh
            parts.append(
                f'<rect class="bin" x="{x:.1f}" y="{base:.1f}" width="{bw - 2:.1f}" '
                f'height="{bh:.1f}" fill="{colour}"><title>{_e(_score(b_lo))}–'
                f"{_e(_score(b_hi))}: {n:,} {what}</title></rect>"
            )
    tx = left + pw * (info.threshold - lo) / (hi - lo)
    parts.append(
        f'<line class="threshold" x1="{tx:.1f}" x2="{tx:.1f}" y1="{top - 4}" y2="{top + ph}" '
        f'stroke="{INK}" stroke-width="1.5" stroke-dasharray="4 3"><title>threshold '
        f"{_cmp(info)} {_e(_score(info.threshold))}</title></line>"
    )
    anchor = "end" if tx > left + pw * 0.7 else "start"
    parts.append(
        _text(
            tx + (-4 if anchor == "end" else 4),
            top + 4,
            f"{_cmp(info)} {_score(info.threshold)}",
            anchor=anchor,
            cls="axis",
        )
    )
    avg = stats.average if stats else (statistics.fmean(values) if values else None)
    head = (
        f'<figure class="hist" data-metric="{_e(info.metric)}"><figcaption>'
        f"<strong>{_e(info.metric)}</strong>"
        f'<span class="muted">n = {len(values):,} · avg {_e(_score(avg))}</span></figcaption>'
    )
    return head + _svg(w, h, "".join(parts), f"score distribution of {info.metric}") + "</figure>"


def _heatmap(
    columns: Sequence[str],
    rows: Sequence[tuple[str, str, str | None]],
    cells: Sequence[Sequence[tuple[float | None, str, str]]],
    label: str,
) -> str:
    """A grid of coloured cells. ``rows``: (label, tooltip, link or None); ``cells``: per row,
    per column (pass share or None, text in the cell, tooltip)."""
    label_w = 220
    n = max(1, len(columns))
    cell_w = max(34.0, min(150.0, (1000 - label_w) / n))
    cell_h = 18
    fits = all(len(c) <= _chars(cell_w - 6, 11) for c in columns)
    # column names that do not fit are turned 35°: room above and to the right for them
    longest = max([len(_short(c, 28)) for c in columns] + [1]) * 6.4
    head_h = 26.0 if fits else 18 + longest * 0.574
    pad = 8.0 if fits else max(8.0, longest * 0.82 - cell_w / 2 + 8)
    width = label_w + cell_w * n + pad
    height = head_h + cell_h * len(rows) + 4
    parts = []
    for j, name in enumerate(columns):
        x = label_w + cell_w * j + cell_w / 2
        if fits:
            parts.append(_text(x, head_h - 9, name, anchor="middle", cls="colhead"))
        else:
            short = _short(name, 28)
            parts.append(
                f'<text x="{x + 4:.1f}" y="{head_h - 6:.1f}" class="colhead" '
                f'transform="rotate(-35 {x + 4:.1f} {head_h - 6:.1f})"><title>{_e(name)}</title>'
                f"{_e(short)}</text>"
            )
    for i, ((row_label, tip, link), row_cells) in enumerate(zip(rows, cells, strict=True)):
        y = head_h + i * cell_h
        text = _text(
            label_w - 8, y + cell_h - 5, _short(row_label, 32), anchor="end", cls="rowhead"
        )
        labelled = f"<g><title>{_e(tip)}</title>{text}</g>"
        parts.append(f'<a href="#{link}">{labelled}</a>' if link else labelled)
        for j, (share, cell_text, cell_tip) in enumerate(row_cells):
            x = label_w + cell_w * j
            fill = SKIP if share is None else _share_colour(share)
            colour = INK if share is None else _on(share)
            parts.append(
                f'<g><rect class="hm-cell" x="{x + 1:.1f}" y="{y + 1:.1f}" '
                f'width="{cell_w - 2:.1f}" height="{cell_h - 2}" fill="{fill}">'
                f"<title>{_e(cell_tip)}</title></rect>"
            )
            if cell_text and cell_w >= 34:
                parts.append(
                    f'<text x="{x + cell_w / 2:.1f}" y="{y + cell_h - 5:.1f}" '
                    f'text-anchor="middle" class="cell" fill="{colour}">{_e(cell_text)}</text>'
                )
            parts.append("</g>")
    return _svg(width, height, "".join(parts), label, "chart heatmap")


def _legend() -> str:
    stops = "".join(f'<span style="background:{_share_colour(s / 10)}"></span>' for s in range(11))
    return (
        '<div class="legend"><span class="muted">pass share</span> 0% '
        f'<span class="ramp">{stops}</span> 100% '
        f'<span class="swatch" style="background:{SKIP}"></span> no score (skipped / not run)'
        "</div>"
    )


def _swatches() -> str:
    items = ((PASS, "pass"), (FAIL, "fail"), (ERROR, "evaluator error"), (SKIP, "skipped"))
    return (
        '<div class="legend">'
        + "".join(f'<span class="swatch" style="background:{c}"></span>{t}' for c, t in items)
        + f' <span class="marker"></span>threshold <span class="dot" style="background:{PASS}">'
        f'</span>average meets it <span class="dot" style="background:{FAIL}"></span>'
        "average misses it</div>"
    )


def _interval(delta: MetricDelta, span: float) -> str:
    """The delta and its 95% interval on a symmetric axis around 0 (tiny forest plot)."""
    w, h = 170, 20
    mid = w / 2

    def x(v: float) -> float:
        return mid + (w / 2 - 8) * max(-1.0, min(1.0, v / span))

    colour = FAIL if delta.worse else (PASS if delta.significant else MUTED)
    parts = [f'<line x1="{mid}" x2="{mid}" y1="2" y2="{h - 2}" stroke="{MUTED}"/>']
    if delta.ci_low is not None and delta.ci_high is not None:
        parts.append(
            f'<line x1="{x(delta.ci_low):.1f}" x2="{x(delta.ci_high):.1f}" y1="{h / 2}" '
            f'y2="{h / 2}" stroke="{colour}" stroke-width="3" stroke-linecap="round"/>'
        )
    if delta.delta is not None:
        parts.append(f'<circle cx="{x(delta.delta):.1f}" cy="{h / 2}" r="4.5" fill="{colour}"/>')
    return _svg(w, h, "".join(parts), f"delta of {delta.metric} with 95% interval", "chart ci")


# --- sections -------------------------------------------------------------------------------


def _section(anchor: str, title: str, body: str, *, note: str = "") -> str:
    n = f'<p class="note">{note}</p>' if note else ""
    return (
        f'<section id="{anchor}"><h2><a class="anchor" href="#{anchor}">{_e(title)}</a></h2>'
        f"{n}{body}</section>"
    )


def _header(data: ReportData) -> str:
    tone, headline, reasons = _verdict(data)
    cases = len({r.case_id for r in data.rows})
    duration = _duration(data.started_at, data.finished_at)
    meta = [
        ("Target", f"{_e(data.target)} <span class='muted'>({_e(data.target_kind)})</span>"),
        ("Suite", _e(data.suite)),
        ("Run id", f"<code>{_e(data.run_id)}</code>"),
        ("Started", _e(data.started_at) or "—"),
        (
            "Finished",
            (_e(data.finished_at) or "—")
            + (f" <span class='muted'>({duration})</span>" if duration else ""),
        ),
        ("Iterations", _int(data.iterations)),
        ("Cases", f"{cases:,} <span class='muted'>({_plural(len(data.rows), 'run')})</span>"),
    ]
    prefix = getattr(data, "report_prefix", "")
    if prefix:
        meta.append(("Reports", f"<code>{_e(prefix)}</code>"))
    dl = "".join(f"<div><dt>{k}</dt><dd>{v}</dd></div>" for k, v in meta)
    items = "".join(f"<li>{_e(_short(r, BANNER_CHARS))}</li>" for r in reasons[:BANNER_LINES])
    if len(reasons) > BANNER_LINES:
        items += f"<li>and {len(reasons) - BANNER_LINES} more (see below)</li>"
    return (
        '<header class="top">'
        f'<p class="eyebrow">evalrunner report</p><h1>{_e(data.target)}</h1>'
        f'<dl class="meta">{dl}</dl>'
        f'<div class="verdict {tone}" role="status"><div class="headline" id="verdict">'
        f"{headline}</div><ul>{items}</ul></div></header>"
    )


def _figures(data: ReportData) -> str:
    rows = data.rows
    latencies = [r.latency_ms for r in rows if r.latency_ms is not None]
    tokens_in = [r.input_tokens for r in rows if r.input_tokens is not None]
    tokens_out = [r.output_tokens for r in rows if r.output_tokens is not None]
    costs = [r.cost for r in rows if r.cost is not None]
    target_errors = sum(1 for r in rows if r.status == "target_error")
    task_failed = sum(1 for r in rows if r.status == "task_failed")
    scored = {r.case_id for r in rows if any(x.status == "scored" for x in r.results)}
    cards = [
        ("Scored cases", f"{len(scored):,}", f"of {len({r.case_id for r in rows}):,}"),
        (
            "Target errors",
            f"{target_errors:,}",
            f"{task_failed:,} task failures" if task_failed else "runs that got no answer",
        ),
        (
            "Latency median",
            _ms(_percentile(latencies, 0.5)),
            f"p95 {_ms(_percentile(latencies, 0.95))}",
        ),
        (
            "Tokens",
            _int(sum(tokens_in) + sum(tokens_out)) if tokens_in or tokens_out else "—",
            f"{_int(sum(tokens_in))} in · {_int(sum(tokens_out))} out"
            if tokens_in or tokens_out
            else "not reported",
        ),
        ("Cost", _money(sum(costs)) if costs else "—", "total" if costs else "not reported"),
    ]
    bad = {"Target errors": target_errors + task_failed > 0}
    return (
        '<div class="cards">'
        + "".join(
            f'<div class="card{" alert" if bad.get(t) else ""}"><div class="k">{t}</div>'
            f'<div class="v">{v}</div><div class="s">{_e(s)}</div></div>'
            for t, v, s in cards
        )
        + "</div>"
    )


def _flips_list(flips: Sequence[CaseFlip]) -> str:
    by_case: dict[str, list[str]] = {}
    for flip in flips:
        by_case.setdefault(flip.case_id, []).append(flip.metric)
    items = "".join(
        f"<li><code>{_e(case)}</code> <span class='muted'>{_e(', '.join(metrics))}</span></li>"
        for case, metrics in list(by_case.items())[:FLIPS_SHOWN]
    )
    rest = len(by_case) - FLIPS_SHOWN
    if rest > 0:
        items += f"<li class='muted'>and {_plural(rest, 'more case')}</li>"
    return f'<ul class="flips">{items}</ul>'


def _regression(reg: Regression) -> str:
    deltas = sorted(reg.deltas, key=lambda d: (not d.worse, not d.significant))
    span = max(
        [abs(v) for d in deltas for v in (d.ci_low, d.ci_high, d.delta) if v is not None] + [1e-9]
    )
    rows: list[str] = []
    quiet: list[str] = []  # no significant change
    for d in deltas:
        status = "worse" if d.worse else ("better" if d.significant else "no significant change")
        cls = "worse" if d.worse else ("better" if d.significant else "")
        interval = (
            f"[{_signed(d.ci_low)}, {_signed(d.ci_high)}]"
            if d.ci_low is not None and d.ci_high is not None
            else "—"
        )
        arrow = "↑" if d.higher_is_better else "↓"
        (rows if d.significant or d.worse else quiet).append(
            f'<tr class="{cls}"><td>{arrow} {_e(d.metric)}</td>'
            f'<td class="num">{_score(d.baseline_average)}</td>'
            f'<td class="num">{_score(d.current_average)}</td>'
            f'<td class="num strong">{_signed(d.delta)}</td><td class="num">{interval}</td>'
            f"<td>{_interval(d, span)}</td><td>{status}</td></tr>"
        )
    worse = [d for d in reg.deltas if d.worse]
    summary = (
        f"<strong>{_plural(len(worse), 'metric')} worse</strong>: "
        + ", ".join(_e(d.metric) for d in worse)
        if worse
        else "No metric is significantly worse."
    )
    reasons = "".join(f"<li>{_clip(r, REASON_LIMIT)}</li>" for r in reg.reasons)
    head = (
        '<div class="scroll"><table class="deltas"><thead><tr><th>Metric</th>'
        "<th class='num'>Baseline</th><th class='num'>Current</th><th class='num'>Δ</th>"
        "<th class='num'>95% interval</th><th>Δ around 0</th><th>Change</th></tr></thead>"
    )
    table = f"{head}<tbody>{''.join(rows)}</tbody></table></div>" if rows else ""
    if quiet:
        table += (
            f'<details class="quiet"><summary>{_plural(len(quiet), "metric")} without a '
            f"significant change</summary>{head}<tbody>{''.join(quiet)}</tbody></table></div>"
            "</details>"
        )
    if not reg.deltas:
        table = '<p class="muted">No metric in common with the baseline.</p>'
    new_cases = len({f.case_id for f in reg.new_failures})
    fixed_cases = len({f.case_id for f in reg.fixed})
    flips = (
        '<div class="two">'
        f'<div><h3>New failures <span class="count bad">{new_cases:,}</span></h3>'
        "<p class='note'>passed every iteration in the baseline, fail now</p>"
        + (_flips_list(reg.new_failures) if reg.new_failures else "<p class='muted'>none</p>")
        + f'</div><div><h3>Fixed <span class="count good">{fixed_cases:,}</span></h3>'
        "<p class='note'>failed in the baseline, pass every iteration now</p>"
        + (_flips_list(reg.fixed) if reg.fixed else "<p class='muted'>none</p>")
        + "</div></div>"
    )
    body = (
        f'<p class="baseline">Baseline: run <code>{_e(reg.baseline_run_id)}</code>, started '
        f"{_e(reg.baseline_started_at)} <span class='muted'>({_e(reg.baseline_report_prefix)})"
        f"</span> — verdict <span class='pill {_e(reg.verdict.split()[0])}'>{_e(reg.verdict)}"
        f"</span></p><p>{summary}</p>" + (f"<ul>{reasons}</ul>" if reasons else "") + table + flips
    )
    return _section("regression", "Regression against the baseline", body)


def _gates(data: ReportData, infos: dict[str, MetricInfo]) -> str:
    if not data.gates:
        return ""
    rows = []
    for g in data.gates:
        info = infos.get(g.metric)
        cmp = _cmp(info) if info else "≥"
        ok = g.passed
        rows.append(
            f'<tr class="{"better" if ok else "worse"}"><td>{_e(g.gate)}</td>'
            f"<td>{_e(g.metric)}</td>"
            f'<td class="num">{cmp} {_e(_score(g.threshold))}</td>'
            f'<td class="num">{_e(_score(g.average))}</td>'
            f"<td>{'passed' if ok else '<strong>FAILED</strong>'}</td></tr>"
        )
    table = (
        '<table class="gates"><thead><tr><th>Gate</th><th>Metric</th><th class="num">fail_under'
        '</th><th class="num">Average</th><th>Result</th></tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table>"
    )
    return _section("gates", "Gates", table, note="the run's fail_under conditions (exit code)")


def _problems(problems: Sequence[Problem], insights: Sequence[Insight]) -> str:
    order = {"high": 0, "medium": 1, "low": 2}
    items = []
    for p in sorted(problems, key=lambda p: order.get(p.severity, 3)):
        metric = f" · <span class='muted'>{_e(p.metric)}</span>" if p.metric else ""
        affected = (
            f"<div class='affected'><span class='muted'>{_plural(len(p.affected_cases), 'case')}"
            f":</span>{_case_chips(p.affected_cases)}</div>"
            if p.affected_cases
            else ""
        )
        items.append(
            f'<article class="problem {_e(p.severity)}"><div class="ptitle">'
            f'<span class="sev {_e(p.severity)}">{_e(p.severity.upper())}</span> '
            f"<span class='ptype'>{_e(p.type.replace('_', ' '))}</span>{metric}</div>"
            f"<p>{_clip(p.description, REASON_LIMIT)}</p>{affected}"
            f'<p class="action"><span class="muted">Suggested action:</span> '
            f"{_e(p.suggested_action)}</p></article>"
        )
    problem_html = "".join(items) or '<p class="muted">No problem found.</p>'
    insight_items = []
    for ins in insights:
        value = (
            f" <span class='pill'>{_e(_score(ins.value))}</span>" if ins.value is not None else ""
        )
        action = (
            f"<div class='action'><span class='muted'>Suggested:</span> "
            f"{_e(ins.suggested_action)}</div>"
            if ins.suggested_action
            else ""
        )
        insight_items.append(
            f"<li><span class='ptype'>{_e(ins.type.replace('_', ' '))}</span>{value} "
            f"{_e(ins.description)}{_case_chips(ins.affected_cases, 6)}{action}</li>"
        )
    insight_html = (
        f"<h3>Insights</h3><ul class='insights'>{''.join(insight_items)}</ul>"
        if insight_items
        else ""
    )
    return _section(
        "problems",
        f"Problems ({len(problems)})",
        problem_html + insight_html,
        note="most severe first",
    )


def _metrics(data: ReportData, stats: dict[Key, MetricStats]) -> str:
    if not data.metrics:
        return _section("metrics", "Metrics", '<p class="muted">The run has no metric.</p>')
    per_iteration = _iteration_stats(data)
    multi = data.iterations > 1 and per_iteration
    rows = []
    for info in _ordered(data.metrics):
        s = stats.get(_key(info))
        its = per_iteration.get(_key(info), [])

        cells = [
            f'<td data-v="{int(info.primary)}">{"●" if info.primary else ""}</td>',
            f"<td>{'↑' if info.higher_is_better else '↓'} {_e(info.metric)}</td>",
            f"<td class='muted'>{_e(info.evaluator)}</td>",
            f'<td class="num" data-v="{_dv(info.threshold)}">'
            f"{_cmp(info)} {_score(info.threshold)}</td>",
        ]
        if s is None:
            cells += ["<td class='muted' colspan='9'>not evaluated</td>"]
        else:
            cells += [
                f'<td class="num strong" data-v="{_dv(s.pass_rate)}">{_pct(s.pass_rate)}</td>',
                f'<td class="num" data-v="{_dv(s.average)}">{_score(s.average)}</td>',
                f'<td class="num" data-v="{s.count}">{s.count:,}</td>',
                f'<td class="num" data-v="{s.skipped}">{s.skipped:,}</td>',
                f'<td class="num" data-v="{s.errored}">{s.errored:,}</td>',
                f'<td class="num" data-v="{_dv(s.min)}">{_score(s.min)}</td>',
                f'<td class="num" data-v="{_dv(s.median)}">{_score(s.median)}</td>',
                f'<td class="num" data-v="{_dv(s.max)}">{_score(s.max)}</td>',
                f'<td class="num" data-v="{_dv(s.std)}">{_score(s.std)}</td>',
            ]
        if multi:
            cells.append(
                f'<td class="num" data-v="{_dv(s.instability if s else None)}">'
                f"{_score(s.instability if s else None)}</td>"
                f"<td class='num'>{' · '.join(_pct(x.pass_rate) for x in its) or '—'}</td>"
            )
        rows.append(f"<tr>{''.join(cells)}</tr>")
    extra = (
        '<th class="num" title="mean spread of a case\'s score across iterations">Instability'
        '</th><th class="num">Pass rate by iteration</th>'
        if multi
        else ""
    )
    table = (
        '<details class="stats"><summary>All statistics</summary><div class="scroll">'
        '<table class="sortable"><thead><tr><th title="primary metric">P</th><th>Metric</th>'
        '<th>Evaluator</th><th class="num">Threshold</th><th class="num">Pass rate</th>'
        '<th class="num">Average</th><th class="num">Scored</th><th class="num">Skipped</th>'
        '<th class="num">Errors</th><th class="num">Min</th><th class="num">Median</th>'
        f'<th class="num">Max</th><th class="num">Std</th>{extra}</tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table></div></details>"
    )
    main, others = _split(data.metrics)
    body = _swatches() + '<div class="scroll">' + _metric_bars(main, stats) + "</div>"
    if others:
        body += (
            f'<details class="others"><summary>Other metrics ({len(others)})</summary>'
            f'<div class="scroll">{_metric_bars(others, stats)}</div></details>'
        )
    body += table
    return _section(
        "metrics",
        "Metrics",
        body,
        note="primary metrics first (bold); ↑ higher is better, ↓ lower is better; pass rate "
        "counts evaluator errors as not passed",
    )


def _distributions(data: ReportData, stats: dict[Key, MetricStats]) -> str:
    by_metric: dict[Key, list[MetricResult]] = {}
    for row in data.rows:
        for r in row.results:
            by_metric.setdefault(_key(r), []).append(r)

    def figures(metrics: Sequence[MetricInfo]) -> list[str]:
        return [
            _histogram(info, by_metric[_key(info)], stats.get(_key(info)))
            for info in metrics
            if any(
                r.status == "scored" and r.score is not None for r in by_metric.get(_key(info), [])
            )
        ]

    main, others = (figures(m) for m in _split(data.metrics))
    if not main and not others:
        return _section(
            "distributions", "Score distributions", '<p class="muted">No score to show.</p>'
        )
    body = '<div class="grid">' + "".join(main) + "</div>" if main else ""
    if others:
        body += (
            f'<details class="others"{"" if main else " open"}><summary>Other metrics '
            f'({len(others)})</summary><div class="grid">{"".join(others)}</div></details>'
        )
    return _section(
        "distributions",
        "Score distributions",
        body,
        note="every case × iteration; blue passed, vermillion failed; dashed: threshold",
    )


def _case_tip(case: _Case) -> str:
    question = case.rows[0].question if case.rows else ""
    status = "; ".join(sorted({r.status for r in case.rows} - {"ok"}))
    return f"{case.case_id}: {_short(question, 140)}" + (f" [{status}]" if status else "")


def _cell_tip(case: _Case, info: MetricInfo, iterations: int) -> tuple[float | None, str, str]:
    cell = case.cell(_key(info))
    head = f"{case.case_id} · {info.metric}"
    if not cell.results:
        reason = next((r.error for r in case.rows if r.error), None)
        return None, "", f"{head}: not evaluated" + (f" ({_short(reason, 200)})" if reason else "")
    share = cell.share
    if share is None:
        reason = next((r.reason for r in cell.results), "")
        return None, "–", f"{head}: skipped — {_short(reason, 200)}"
    mean = cell.mean
    parts = [f"{head}: passed {cell.passed}/{cell.judged}"]
    if mean is not None:
        parts.append(f"mean score {_score(mean)}")
        if len(cell.scores) > 1:
            parts.append("scores " + ", ".join(_score(x) for x in cell.scores))
    errors = sum(1 for r in cell.results if r.status == "error")
    if errors:
        parts.append(f"{errors} evaluator error(s)")
    parts.append(f"threshold {_cmp(info)} {_score(info.threshold)}")
    if iterations > 1:
        parts.append(f"{len(cell.results)} iteration(s)")
    failing = next((r for r in cell.results if r.status == "error" or r.success is False), None)
    if failing is not None:
        parts.append(f"reason: {_short(failing.reason, 200)}")
    return share, _score(mean) if mean is not None else "err", " · ".join(parts)


def _case_heatmap(data: ReportData, cases: Sequence[_Case], anchors: dict[str, str]) -> str:
    columns = _primary(data.metrics)
    if not cases or not columns:
        return _section("heatmap", "Cases × metrics", '<p class="muted">No case to show.</p>')
    shown = cases[:HEATMAP_ROWS]
    rows = [(c.case_id, _case_tip(c), anchors.get(c.case_id)) for c in shown]
    cells = [[_cell_tip(c, info, data.iterations) for info in columns] for c in shown]
    note = (
        "worst first; colour: share of iterations passed; number: mean score; hover a cell "
        "for the reason"
    )
    if len(cases) > len(shown):
        note += (
            f". Showing the {len(shown):,} worst of {len(cases):,} cases; details.csv has them all"
        )
    chart = _heatmap([m.metric for m in columns], rows, cells, "cases by primary metric")
    return _section(
        "heatmap",
        "Cases × primary metrics",
        _legend() + f'<div class="scroll tall">{chart}</div>',
        note=_e(note),
    )


def _qa(label: str, text: str | None, limit: int = TEXT_LIMIT, cls: str = "") -> str:
    return (
        f'<div class="qa {cls}"><div class="k">{label}</div>'
        f'<div class="txt">{_clip(text, limit)}</div></div>'
    )


def _worst_card(case: _Case, anchor: str, rank: int, data: ReportData, *, open_: bool) -> str:
    metrics = _ordered(data.metrics)
    primary = {_key(m) for m in _primary(data.metrics)}

    def row_badness(row: CaseRow) -> tuple[int, int, int]:
        fails = sum(
            1
            for r in row.results
            if _key(r) in primary and (r.status == "error" or r.success is False)
        )
        return (row.answer is None, -fails, row.iteration)

    shown = min(case.rows, key=row_badness)
    first = case.rows[0]
    cats = "".join(f"<span class='tag'>{_e(c)}</span>" for c in first.categories)
    failing_names = [m.metric for m in metrics if _key(m) in set(case.failing)]
    summary = (
        f"fails {len(case.failing)} of {len(primary)} primary metrics"
        if case.failing
        else "primary metrics pass"
    )
    statuses = sorted({r.status for r in case.rows} - {"ok"})
    badges = "".join(f"<span class='sev high'>{_e(s.replace('_', ' '))}</span>" for s in statuses)
    answer_label = (
        f"Answer <span class='it'>(iteration {shown.iteration} of {len(case.rows)})</span>"
        if len(case.rows) > 1
        else "Answer"
    )
    parts = [
        f'<details class="case" id="{anchor}"{" open" if open_ else ""}><summary>'
        f'<span class="rank">#{rank}</span> '
        f"<code class='cid'>{_e(case.case_id)}</code> {cats} {badges}"
        f"<span class='summary'>{_e(summary)}"
        + (f": {_e(', '.join(failing_names))}" if failing_names else "")
        + "</span></summary>",
        '<div class="qas">',
        _qa("Question", first.question),
        _qa("Expected answer", first.expected_answer),
        _qa(answer_label, shown.answer, cls="answer"),
        "</div>",
    ]
    errors = [(r.iteration, r.error) for r in case.rows if r.error]
    if errors:
        parts.append(
            "<div class='error'><strong>Error</strong> "
            + "".join(
                f"<div><span class='muted'>iteration {i}:</span> {_clip(err, REASON_LIMIT)}</div>"
                for i, err in errors
            )
            + "</div>"
        )
    # every failing metric: its score in each iteration and the reason; the primary ones in
    # view, the others folded under them
    primary_rows: list[str] = []
    other_rows: list[str] = []
    for info in metrics:
        cell = case.cell(_key(info))
        bad = [r for r in cell.results if r.status == "error" or r.success is False]
        if not bad:
            continue
        scores = " / ".join(
            (_score(r.score) if r.status == "scored" else r.status) for r in cell.results
        )
        reasons: list[tuple[int, str]] = []
        for row in case.rows:
            for r in row.results:
                failed = r.status == "error" or r.success is False
                if _key(r) == _key(info) and failed and all(r.reason != x for _, x in reasons):
                    reasons.append((row.iteration, r.reason))
        reason_html = (
            _clip(reasons[0][1], REASON_LIMIT)
            if len(reasons) == 1
            else "".join(
                f"<div><span class='muted'>iteration {i}:</span> {_clip(x, REASON_LIMIT)}</div>"
                for i, x in reasons
            )
        )
        (primary_rows if _key(info) in primary else other_rows).append(
            f"<tr><td>{_e(info.metric)}</td>"
            f'<td class="num strong">{_e(scores)}</td>'
            f'<td class="num">{_cmp(info)} {_score(info.threshold)}</td>'
            f"<td class='reason'>{reason_html}</td></tr>"
        )
    head = (
        '<table class="failing"><colgroup><col class="c-metric"><col class="c-score">'
        '<col class="c-thr"><col></colgroup><thead><tr><th>Failing {}</th><th class="num">Score'
        + (" (per iteration)" if len(case.rows) > 1 else "")
        + '</th><th class="num">Threshold</th><th>Reason</th></tr></thead><tbody>'
    )
    if primary_rows:
        parts.append(head.format("primary metric") + "".join(primary_rows) + "</tbody></table>")
    # the folded parts share one line until opened
    folds: list[str] = []
    if other_rows:
        folds.append(
            f'<details class="other-failing"{"" if primary_rows else " open"}><summary>'
            f"Other failing metrics ({len(other_rows)})</summary>"
            + head.format("metric")
            + "".join(other_rows)
            + "</tbody></table></details>"
        )
    others = [r for r in case.rows if r is not shown and r.answer is not None]
    if others and any(r.answer != shown.answer for r in others):
        folds.append(
            f"<details><summary>Answers of the other iterations ({len(others)})</summary>"
            + "".join(_qa(f"Iteration {r.iteration}", r.answer, CONTEXT_LIMIT) for r in others)
            + "</details>"
        )
    contexts = shown.contexts
    if contexts:
        items = "".join(f"<li>{_clip(c, CONTEXT_LIMIT)}</li>" for c in contexts[:CONTEXTS_SHOWN])
        rest = len(contexts) - CONTEXTS_SHOWN
        more = f"<p class='muted'>and {rest:,} more in details.csv</p>" if rest > 0 else ""
        folds.append(
            f'<details class="contexts"><summary>Retrieved contexts ({len(contexts)})</summary>'
            f'<ol class="contexts">{items}</ol>{more}</details>'
        )
    elif shown.status == "ok":
        folds.append("<span class='muted small'>No retrieved context</span>")
    facts = []
    if shown.latency_ms is not None:
        facts.append(f"latency {_ms(shown.latency_ms)}")
    if shown.input_tokens is not None or shown.output_tokens is not None:
        facts.append(f"tokens {_int(shown.input_tokens)} in / {_int(shown.output_tokens)} out")
    if shown.cost is not None:
        facts.append(f"cost {_money(shown.cost)}")
    if facts:
        folds.append(f"<span class='facts muted small'>{' · '.join(facts)}</span>")
    if folds:
        parts.append(f'<div class="folds">{"".join(folds)}</div>')
    parts.append("</details>")
    return "".join(parts)


def _worst(data: ReportData, worst: Sequence[_Case], anchors: dict[str, str]) -> str:
    if not worst:
        body = '<p class="muted">No case failed a primary metric or errored.</p>'
        return _section("worst", "Worst cases", body)
    cards = "".join(
        _worst_card(c, anchors[c.case_id], i + 1, data, open_=i < WORST_OPEN)
        for i, c in enumerate(worst)
    )
    failing = sum(1 for c in data.rows if c.status != "ok")
    note = (
        "ranked by primary metrics failed (a target error counts as one), then pass share, "
        f"then mean score; top {len(worst)}"
    )
    if failing:
        note += f"; {_plural(failing, 'run')} without an answer"
    return _section("worst", "Worst cases", cards, note=_e(note))


def _matrix(matrix: dict[str, Any]) -> str:
    expected = list(matrix)[:30]
    predicted: list[str] = []
    for e in expected:
        for p in matrix[e] if isinstance(matrix[e], dict) else {}:
            if p not in predicted:
                predicted.append(p)
    predicted = predicted[:30]
    peak = max(
        [v for e in expected for v in matrix[e].values() if isinstance(v, int | float)] + [1]
    )
    head = "".join(f"<th class='num'>{_e(_short(str(p), 24))}</th>" for p in predicted)
    rows = []
    for e in expected:
        cells = []
        for p in predicted:
            v = matrix[e].get(p, 0)
            n = v if isinstance(v, int | float) else 0
            alpha = 0.12 + 0.78 * n / peak if n else 0
            base = "0,114,178" if e == p else "213,94,0"
            style = f' style="background:rgba({base},{alpha:.2f})"' if n else ""
            strong = " strong" if alpha > 0.5 else ""
            light = " light" if alpha > 0.55 else ""
            cells.append(f'<td class="num{strong}{light}"{style}>{_e(v)}</td>')
        rows.append(f"<tr><th>{_e(_short(str(e), 24))}</th>{''.join(cells)}</tr>")
    return (
        '<div class="scroll"><table class="matrix"><thead><tr><th class="corner">expected ↓ · '
        f"predicted →</th>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table></div>"
    )


def _scalar(value: Any) -> bool:
    return value is None or isinstance(value, str | int | float | bool)


def _fmt_scalar(value: Any) -> str:
    if isinstance(value, bool) or value is None:
        return _e(json.dumps(value))
    if isinstance(value, float):
        return _e(_score(value))
    if isinstance(value, int):
        return f"{value:,}"
    return _clip(str(value), 500)


def _json_block(value: Any) -> str:
    text = json.dumps(value, indent=2, ensure_ascii=False, default=str, sort_keys=False)
    return f"<pre>{_clip(text, JSON_LIMIT)}</pre>"


def _kv(values: dict[str, Any]) -> str:
    items = list(values.items())[:60]
    return (
        '<dl class="kv">'
        + "".join(f"<div><dt>{_e(k)}</dt><dd>{_fmt_scalar(v)}</dd></div>" for k, v in items)
        + "</dl>"
    )


def _summary_block(summary: Any) -> str:
    if not isinstance(summary, dict):
        return _json_block(summary)
    scalars = {k: v for k, v in summary.items() if _scalar(v)}
    rest = {k: v for k, v in summary.items() if not _scalar(v)}
    parts = []
    if scalars:
        parts.append(_kv(scalars))
    for k, v in rest.items():
        if (
            k == "confusion_matrix"
            and isinstance(v, dict)
            and all(isinstance(x, dict) for x in v.values())
        ):
            parts.append(f"<h4>Confusion matrix</h4>{_matrix(v)}")
        elif (
            isinstance(v, dict)
            and v
            and all(isinstance(x, dict) and all(_scalar(y) for y in x.values()) for x in v.values())
        ):
            cols: list[str] = []
            for x in v.values():
                cols += [c for c in x if c not in cols]
            head = "".join(f"<th class='num'>{_e(c)}</th>" for c in cols)
            body = "".join(
                f"<tr><th>{_e(_short(str(name), 40))}</th>"
                + "".join(f"<td class='num'>{_fmt_scalar(x.get(c))}</td>" for c in cols)
                + "</tr>"
                for name, x in list(v.items())[:50]
            )
            parts.append(
                f"<h4>{_e(k.replace('_', ' '))}</h4><div class='scroll'><table class='small'>"
                f"<thead><tr><th></th>{head}</tr></thead><tbody>{body}</tbody></table></div>"
            )
        elif isinstance(v, dict) and v and all(_scalar(x) for x in v.values()):
            parts.append(f"<h4>{_e(k.replace('_', ' '))}</h4>{_kv(v)}")
        elif isinstance(v, list) and all(_scalar(x) for x in v):
            shown = ", ".join(_e(x) for x in v[:60]) + (" …" if len(v) > 60 else "")
            parts.append(f"<dl class='kv'><div><dt>{_e(k)}</dt><dd>{shown}</dd></div></dl>")
        else:
            parts.append(f"<h4>{_e(k)}</h4>{_json_block(v)}")
    return "".join(parts)


def _run_metrics(data: ReportData) -> str:
    if not data.run_metrics:
        return ""
    cards = "".join(
        f'<div class="panel"><h3>{_e(name)}</h3>{_summary_block(summary)}</div>'
        for name, summary in data.run_metrics.items()
    )
    return _section(
        "run-figures",
        "Run-level figures",
        f'<div class="panels">{cards}</div>',
        note="figures no per-case score can hold, over the answered cases",
    )


def _config_value(value: Any) -> str:
    if _scalar(value):
        return _fmt_scalar(value)
    compact = json.dumps(value, ensure_ascii=False, default=str)
    if len(compact) <= 90:
        return f"<code class='json'>{_e(compact)}</code>"
    return _json_block(value)


def _config(config: dict[str, Any]) -> str:
    if not config:
        body = '<p class="muted">No configuration recorded.</p>'
    else:
        body = (
            '<dl class="config">'
            + "".join(
                f"<div><dt>{_e(k)}</dt><dd>{_config_value(v)}</dd></div>" for k, v in config.items()
            )
            + "</dl>"
        )
    return _section("config", "Configuration", body, note="as given for the run, secrets masked")


# --- page -----------------------------------------------------------------------------------

_CSS = """
:root{--ink:#1f2937;--muted:#6b7280;--line:#e5e7eb;--bg:#f6f7f9;--card:#fff;--pass:#0072b2;
--fail:#d55e00;--warn:#e69f00;--good:#007a5e;--err:#cc79a7}
*{box-sizing:border-box}
html{-webkit-text-size-adjust:100%}
body{margin:0;background:var(--bg);color:var(--ink);font:14px/1.5 system-ui,-apple-system,
"Segoe UI",Roboto,"Helvetica Neue",Arial,"Noto Sans","Liberation Sans",sans-serif;
-webkit-print-color-adjust:exact;print-color-adjust:exact}
main{max-width:1240px;margin:0 auto;padding:20px 28px 48px}
code,pre{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,"Liberation Mono",monospace;
font-size:12.5px}
code{background:#f1f2f4;border-radius:4px;padding:1px 5px;word-break:break-all}
pre{background:#f8f9fa;border:1px solid var(--line);border-radius:6px;padding:10px 12px;
white-space:pre-wrap;word-break:break-word;max-height:420px;overflow:auto;margin:4px 0}
h1{font-size:26px;line-height:1.2;margin:2px 0 12px;word-break:break-word}
h2{font-size:19px;margin:0 0 4px}
h2 a.anchor{color:inherit;text-decoration:none}
h3{font-size:15px;margin:16px 0 6px}
h4{font-size:13px;margin:12px 0 4px;color:var(--muted);text-transform:capitalize}
section{background:var(--card);border:1px solid var(--line);border-radius:10px;
padding:18px 22px;margin:16px 0}
.note{color:var(--muted);margin:0 0 12px;font-size:13px}
.muted{color:var(--muted)}
.small{font-size:12.5px}
.strong{font-weight:600}
.eyebrow{margin:0;color:var(--muted);text-transform:uppercase;letter-spacing:.08em;
font-size:11.5px;font-weight:600}
header.top{background:var(--card);border:1px solid var(--line);border-radius:10px;
padding:18px 22px 20px}
dl.meta{display:grid;grid-template-columns:repeat(auto-fill,minmax(210px,1fr));gap:6px 20px;
margin:0 0 14px}
dl.meta div,dl.kv div{min-width:0}
dl.meta dt,dl.kv dt,.card .k,.qa .k{color:var(--muted);font-size:11.5px;text-transform:uppercase;
letter-spacing:.04em;font-weight:600}
dl.meta dd{margin:0;word-break:break-word}
.verdict{border-radius:8px;padding:12px 18px;display:flex;gap:22px;align-items:center;
flex-wrap:wrap}
.verdict .headline{font-size:24px;font-weight:800;letter-spacing:.04em}
.verdict ul{margin:0;padding-left:18px;flex:1;min-width:280px}
.verdict.bad{background:#b3470b;color:#fff}
.verdict.warn{background:#fbe3b0;color:#3b2a00;border:1px solid #e69f00}
.verdict.good{background:#007a5e;color:#fff}
.verdict.neutral{background:#e5e7eb;color:#1f2937}
nav.toc{display:flex;flex-wrap:wrap;gap:4px 14px;margin:12px 2px 0;font-size:13px}
nav.toc a{color:var(--pass);text-decoration:none}
nav.toc a:hover{text-decoration:underline}
.cards{display:grid;grid-template-columns:repeat(auto-fit,minmax(170px,1fr));gap:12px;
margin:16px 0 0}
.card{background:var(--card);border:1px solid var(--line);border-radius:10px;padding:10px 14px}
.card .v{font-size:22px;font-weight:700;line-height:1.3}
.card .s{color:var(--muted);font-size:12.5px}
.card.alert{border-color:#d55e00;box-shadow:inset 4px 0 0 #d55e00}
table{border-collapse:collapse;width:100%;font-size:13px}
th,td{text-align:left;padding:6px 8px;border-bottom:1px solid var(--line);vertical-align:top}
th{font-weight:600;color:#374151;background:#fafafa}
td.num,th.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
tr.worse td{background:#fdf0e8}
tr.worse td:first-child{box-shadow:inset 3px 0 0 var(--fail)}
tr.better td:first-child{box-shadow:inset 3px 0 0 var(--pass)}
table.sortable th{cursor:pointer;user-select:none}
table.sortable th:hover{background:#f0f1f3}
.scroll{overflow-x:auto}
.scroll.tall{max-height:640px;overflow:auto;border:1px solid var(--line);border-radius:6px}
.chart{display:block;max-width:none;font-size:12px}
.chart text{fill:#1f2937}
.chart .axis{font-size:11px;fill:#6b7280}
.chart .muted{fill:#6b7280}
.chart .label{font-size:12.5px}
.chart .strong{font-weight:700}
.chart .value{font-weight:700;font-variant-numeric:tabular-nums}
.chart .colhead{font-size:11px;font-weight:600}
.chart .rowhead{font-size:11px;font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace}
.chart .cell{font-size:10px;font-variant-numeric:tabular-nums;pointer-events:none}
.chart a text{fill:#0072b2}
.chart a:hover text{text-decoration:underline}
svg.ci{display:inline-block;vertical-align:middle}
.legend{display:flex;flex-wrap:wrap;align-items:center;gap:6px 10px;font-size:12px;
color:#374151;margin:0 0 10px}
.legend .swatch{display:inline-block;width:12px;height:12px;border-radius:2px;margin-right:-4px}
.legend .dot{display:inline-block;width:10px;height:10px;border-radius:50%;margin-right:-4px}
.legend .marker{display:inline-block;width:2px;height:14px;background:#1f2937;margin-right:-4px}
.legend .ramp{display:inline-flex}
.legend .ramp span{display:inline-block;width:14px;height:12px}
.grid{display:grid;grid-template-columns:repeat(auto-fill,minmax(300px,1fr));gap:14px}
figure.hist{margin:0;border:1px solid var(--line);border-radius:8px;padding:8px 10px}
figure.hist figcaption{display:flex;justify-content:space-between;gap:8px;font-size:13px}
figure.hist figcaption strong{overflow:hidden;text-overflow:ellipsis;white-space:nowrap}
article.problem{border:1px solid var(--line);border-left:5px solid var(--muted);
border-radius:6px;padding:8px 14px;margin:0 0 10px}
article.problem.high{border-left-color:var(--fail)}
article.problem.medium{border-left-color:var(--warn)}
article.problem.low{border-left-color:#56b4e9}
article.problem p{margin:4px 0}
.sev{display:inline-block;font-size:10.5px;font-weight:700;letter-spacing:.05em;padding:1px 7px;
border-radius:10px;background:#e5e7eb;color:#1f2937;text-transform:uppercase}
.sev.high{background:var(--fail);color:#fff}
.sev.medium{background:var(--warn);color:#2b1d00}
.sev.low{background:#cfe8f7;color:#0b3954}
.ptype{font-weight:600;text-transform:capitalize}
.chips{display:inline-flex;flex-wrap:wrap;gap:4px;margin-left:6px;vertical-align:middle}
.affected{margin:4px 0}
.action{margin:4px 0}
ul.insights{padding-left:18px}
ul.insights li{margin:4px 0}
.pill{display:inline-block;border-radius:10px;padding:0 8px;background:#eef2f7;font-size:12px;
font-weight:600}
.pill.regression{background:var(--fail);color:#fff}
.pill.improvement{background:var(--pass);color:#fff}
.count{display:inline-block;min-width:22px;text-align:center;border-radius:10px;padding:0 7px;
font-size:12px;color:#fff;background:var(--muted)}
.count.bad{background:var(--fail)}
.count.good{background:var(--pass)}
.two{display:grid;grid-template-columns:1fr 1fr;gap:20px}
ul.flips{margin:0;padding-left:18px;columns:2;column-gap:20px}
ul.flips li{break-inside:avoid}
details>summary{cursor:pointer;color:#0072b2;font-weight:600;margin:8px 0 4px}
details.stats,details.others{margin-top:12px}
details.quiet{margin-top:8px}
details.case{border:1px solid var(--line);border-radius:8px;padding:8px 16px;margin:0 0 10px;
break-inside:avoid-page}
details.case[open]{padding-bottom:12px}
details.case>summary{display:flex;flex-wrap:wrap;align-items:center;gap:4px 8px;margin:0;
color:var(--ink);font-weight:400;list-style:none}
details.case>summary::-webkit-details-marker{display:none}
details.case>summary::before{content:"▸";color:var(--pass);font-size:13px;width:10px}
details.case[open]>summary::before{content:"▾"}
details.case[open]>summary{margin-bottom:8px}
details.case .rank{font-weight:800;color:var(--muted)}
details.case .cid{font-size:13.5px;font-weight:600}
details.case .summary{font-weight:600;color:#9a3c05}
.tag{background:#eef2f7;border-radius:4px;padding:0 6px;font-size:12px}
.qas{display:grid;grid-template-columns:repeat(3,minmax(0,1fr));gap:10px}
.qa .txt{white-space:pre-wrap;word-break:break-word;background:#fafafa;border:1px solid
var(--line);border-radius:6px;padding:6px 9px;max-height:260px;overflow:auto;font-size:13px}
.qa .it{text-transform:none;letter-spacing:0;font-weight:400}
.qa.answer .txt{background:#fffaf4;border-color:#f3d9c4}
.error{margin:10px 0;padding:8px 12px;border-radius:6px;background:#fdf0e8;
border:1px solid #f1c3a3;word-break:break-word}
table.failing{margin-top:10px;table-layout:fixed}
.folds{display:flex;flex-wrap:wrap;align-items:baseline;gap:0 24px;margin-top:4px}
.folds>details[open]{flex-basis:100%}
.folds .facts{margin-left:auto}
table.failing col.c-metric{width:22%}
table.failing col.c-score{width:15%}
table.failing col.c-thr{width:10%}
table.failing td.reason{white-space:pre-wrap;word-break:break-word}
ol.contexts li{white-space:pre-wrap;word-break:break-word;margin:0 0 8px;font-size:12.5px;
background:#fafafa;border:1px solid var(--line);border-radius:6px;padding:6px 9px}
.more{color:var(--muted);font-style:italic}
.none{color:var(--muted)}
.panels{display:grid;grid-template-columns:repeat(auto-fit,minmax(360px,1fr));gap:14px}
.panel{border:1px solid var(--line);border-radius:8px;padding:10px 14px;min-width:0}
.panel h3{margin:0 0 8px}
dl.kv{display:grid;grid-template-columns:repeat(auto-fill,minmax(140px,1fr));gap:6px 14px;
margin:0}
dl.kv dd{margin:0;font-weight:600;font-variant-numeric:tabular-nums;word-break:break-word}
table.matrix{width:auto}
table.matrix td{min-width:44px}
table.matrix td.light{color:#fff}
table.matrix th.corner{font-weight:500;color:var(--muted);font-size:11.5px}
table.small{width:auto}
dl.config{margin:0}
dl.config>div{display:grid;grid-template-columns:200px 1fr;gap:12px;padding:6px 0;
border-bottom:1px solid var(--line)}
dl.config dt{font-weight:600}
dl.config dd{margin:0;min-width:0;word-break:break-word}
td.best{background:#e6f1f8;font-weight:700}
td .rate{color:var(--muted);font-size:11.5px;font-weight:400}
td.target{white-space:nowrap}
td.alert-num{color:#b3470b;font-weight:700}
.card .v.name{font-size:17px;word-break:break-word}
table.leaderboard th{vertical-align:bottom;white-space:normal;min-width:74px}
figure.hist svg{width:100%;height:auto}
.star{color:#0072b2}
.highlights{display:grid;grid-template-columns:repeat(auto-fit,minmax(200px,1fr));gap:12px}
footer{color:var(--muted);font-size:12px;text-align:center;margin-top:24px}
@media (max-width:820px){.qas,.two{grid-template-columns:1fr}main{padding:12px}}
@media print{body{background:#fff;font-size:12px}main{max-width:none;padding:0}
section,header.top{border:none;padding:8px 0;margin:8px 0;break-inside:auto}
nav.toc{display:none}.scroll.tall{max-height:none;overflow:visible;border:none}
.qa .txt,pre{max-height:none;overflow:visible}h2{break-after:avoid}
a{color:inherit;text-decoration:none}}
"""

_JS = (
    "document.documentElement.setAttribute('data-js','on');"
    "document.querySelectorAll('table.sortable').forEach(function(t){"
    "t.querySelectorAll('thead th').forEach(function(th,i){th.addEventListener('click',"
    "function(){var b=t.tBodies[0],rs=Array.prototype.slice.call(b.rows),"
    "d=th.dataset.dir==='asc'?-1:1;th.dataset.dir=d>0?'asc':'desc';"
    "function v(r){var c=r.cells[i];if(!c)return'';var x=c.getAttribute('data-v');"
    "return x!==null&&x!==''&&!isNaN(+x)?+x:c.textContent.trim().toLowerCase();}"
    "rs.sort(function(a,b2){var x=v(a),y=v(b2);return (x>y?1:x<y?-1:0)*d;});"
    "rs.forEach(function(r){b.appendChild(r);});});});});"
    "window.addEventListener('beforeprint',function(){"
    "document.querySelectorAll('details').forEach(function(d){d.open=true;});});"
)
_JS_HASH = base64.b64encode(hashlib.sha256(_JS.encode("utf-8")).digest()).decode("ascii")
#: No fetch of anything; only the page's own script (by hash) runs; inline styles allowed.
_CSP = (
    "default-src 'none'; img-src data:; style-src 'unsafe-inline'; "
    f"script-src 'sha256-{_JS_HASH}'; base-uri 'none'; form-action 'none'"
)


def _page(title: str, body: str) -> str:
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{_CSP}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        '<meta name="generator" content="evalrunner">'
        f"<title>{_e(title)}</title><style>{_CSS}</style></head>"
        f"<body><main>{body}</main><script>{_JS}</script></body></html>\n"
    )


def _toc(entries: Sequence[tuple[str, str]]) -> str:
    links = "".join(f'<a href="#{a}">{_e(t)}</a>' for a, t in entries)
    return f'<nav class="toc" aria-label="sections">{links}</nav>'


def render_report(data: ReportData) -> str:
    """The run's report.html: one self-contained page, decisive facts first."""
    stats = _run_stats(data)
    infos = {m.metric: m for m in data.metrics}
    cases = sorted(_aggregate(data.rows, _primary(data.metrics)), key=_Case.sort_key)
    worst = [c for c in cases if c.badness][:WORST_CASES]
    anchors = {c.case_id: f"case-{i + 1}" for i, c in enumerate(worst)}

    sections: list[tuple[str, str, str]] = []  # (anchor, toc title, html)
    if data.regression is not None:
        sections.append(("regression", "Regression", _regression(data.regression)))
    if data.gates:
        sections.append(("gates", "Gates", _gates(data, infos)))
    sections.append(("problems", "Problems", _problems(data.problems, data.insights)))
    sections.append(("metrics", "Metrics", _metrics(data, stats)))
    sections.append(("distributions", "Distributions", _distributions(data, stats)))
    sections.append(("heatmap", "Heatmap", _case_heatmap(data, cases, anchors)))
    sections.append(("worst", "Worst cases", _worst(data, worst, anchors)))
    run_figures = _run_metrics(data)
    if run_figures:
        sections.append(("run-figures", "Run-level figures", run_figures))
    sections.append(("config", "Configuration", _config(data.config)))

    body = (
        _header(data)
        + _toc([(a, t) for a, t, _ in sections])
        + _figures(data)
        + "".join(h for _, _, h in sections)
        + f"<footer>evalrunner · run {_e(data.run_id)} · finished {_e(data.finished_at)}"
        "</footer>"
    )
    _, headline, _ = _verdict(data)
    return _page(f"{headline} · {data.target} · {data.suite}", body)


# --- leaderboard ----------------------------------------------------------------------------


def _leader_bars(board: Leaderboard, info: MetricInfo) -> str:
    """Average of each target on one metric against the threshold; the best is marked ★."""
    label_w, bar_w, row_h = 170, 190, 22
    entries = board.entries
    height = row_h * len(entries) + 6
    best = board.best_per_metric.get(info.metric)
    values = [e.averages.get(info.metric) for e in entries]
    lo, hi = _scale_range([v for v in values if v is not None], [info.threshold])
    parts = []
    for i, entry in enumerate(entries):
        y = i * row_h + 3
        avg = entry.averages.get(info.metric)
        is_best = entry.target == best
        parts.append(
            _text(
                label_w - 8,
                y + 14,
                _short(entry.target, 26),
                anchor="end",
                cls="label" + (" strong" if is_best else ""),
            )
        )
        parts.append(
            f'<rect x="{label_w}" y="{y + 3}" width="{bar_w}" height="14" fill="#F3F4F6"/>'
        )
        if avg is not None:
            meets = avg >= info.threshold if info.higher_is_better else avg <= info.threshold
            colour = (PASS if meets else FAIL) if is_best else ("#56B4E9" if meets else "#F0A66E")
            parts.append(
                f'<rect class="lb-bar" x="{label_w}" y="{y + 3}" '
                f'width="{bar_w * (avg - lo) / (hi - lo):.1f}" height="14" fill="{colour}">'
                f"<title>{_e(entry.target)} · {_e(info.metric)}: average {_e(_score(avg))}, "
                f"pass rate {_pct(entry.pass_rates.get(info.metric))}</title></rect>"
            )
        parts.append(
            _text(
                label_w + bar_w + 6,
                y + 14,
                _score(avg) + (" ★" if is_best else ""),
                cls="value",
            )
        )
    tx = label_w + bar_w * (info.threshold - lo) / (hi - lo)
    parts.append(
        f'<line class="threshold" x1="{tx:.1f}" x2="{tx:.1f}" y1="2" y2="{height - 2}" '
        f'stroke="{INK}" stroke-width="1.5" stroke-dasharray="3 2"><title>threshold '
        f"{_cmp(info)} {_e(_score(info.threshold))}</title></line>"
    )
    best_text = f"best: {_e(best)}" if best else "no best target"
    return (
        f'<figure class="hist"><figcaption><strong>{"↑" if info.higher_is_better else "↓"} '
        f"{_e(info.metric)}</strong><span class='muted'>{best_text}</span></figcaption>"
        + _svg(label_w + bar_w + 60, height, "".join(parts), f"average by target, {info.metric}")
        + "</figure>"
    )


def _leader_cell(value: float | None, rate: float | None, best: bool, metric: str) -> str:
    cls = "num best" if best else "num"
    title = f' title="best on {_e(metric)}"' if best else ""
    return (
        f'<td class="{cls}"{title} data-v="{_dv(value)}">'
        + ('<span class="star">★</span> ' if best else "")
        + f"{_score(value)}<div class='rate'>{_pct(rate)} pass</div></td>"
    )


def render_leaderboard(board: Leaderboard) -> str:
    """A comparison of targets on one suite: one self-contained page."""
    metrics = _ordered(board.metrics)
    entries = board.entries

    highlights = [
        ("Fastest", board.fastest, "lowest median latency"),
        ("Slowest", board.slowest, "highest median latency"),
        ("Cheapest", board.cheapest, "lowest total cost"),
        ("Costliest", board.costliest, "highest total cost"),
    ]
    cards = "".join(
        f'<div class="card"><div class="k">{k}</div><div class="v name">'
        f"{_e(v) if v else '—'}</div><div class='s'>{s}</div></div>"
        for k, v, s in highlights
    )
    head = "".join(
        f'<th class="num" title="{_e(m.metric)} ({_e(m.evaluator)}), threshold {_cmp(m)} '
        f'{_score(m.threshold)}">{"● " if m.primary else ""}{"↑" if m.higher_is_better else "↓"} '
        f"{_e(m.metric)}</th>"
        for m in metrics
    )
    rows = []
    for entry in entries:
        cells = [
            f"<td class='target'><strong>{_e(entry.target)}</strong><div class='rate'>"
            f"{_e(entry.run_id)}</div></td>"
        ]
        cells += [
            _leader_cell(
                entry.averages.get(m.metric),
                entry.pass_rates.get(m.metric),
                board.best_per_metric.get(m.metric) == entry.target,
                m.metric,
            )
            for m in metrics
        ]
        cells += [
            _num_td(entry.latency_median_ms, _ms(entry.latency_median_ms)),
            _num_td(entry.latency_p95_ms, _ms(entry.latency_p95_ms)),
            _num_td(entry.total_tokens, _int(entry.total_tokens)),
            _num_td(entry.total_cost, _money(entry.total_cost)),
            _num_td(entry.errors, f"{entry.errors:,}", "num alert-num" if entry.errors else "num"),
        ]
        rows.append(f"<tr>{''.join(cells)}</tr>")
    table = (
        '<div class="scroll"><table class="sortable leaderboard"><thead>'
        f"<tr><th>Target</th>{head}"
        '<th class="num">Latency median</th><th class="num">Latency p95</th>'
        '<th class="num">Tokens</th><th class="num">Cost</th><th class="num">Errors</th></tr>'
        f"</thead><tbody>{''.join(rows)}</tbody></table></div>"
    )

    charts = "".join(_leader_bars(board, m) for m in metrics)
    difficult = board.difficult_cases
    if difficult and entries:
        shown = difficult[:LEADERBOARD_ROWS]
        hm_rows = [
            (
                d.case_id,
                f"{d.case_id}: {_short(d.question, 140)} — failed by "
                f"{', '.join(d.failed_by) or 'none'}",
                None,
            )
            for d in shown
        ]
        hm_cells = [
            [
                (
                    d.pass_share.get(e.target),
                    _pct(d.pass_share.get(e.target)) if e.target in d.pass_share else "",
                    f"{d.case_id} · {e.target}: "
                    + (
                        f"passed {_pct(d.pass_share[e.target])} of iterations × primary metrics"
                        if e.target in d.pass_share
                        else "not run"
                    ),
                )
                for e in entries
            ]
            for d in shown
        ]
        note = (
            "most difficult first; colour and number: share of iterations × primary metrics passed"
        )
        if len(difficult) > len(shown):
            note += f"; showing {len(shown)} of {len(difficult)}"
        heat = _section(
            "difficult",
            "Difficult cases × targets",
            _legend()
            + '<div class="scroll tall">'
            + _heatmap([e.target for e in entries], hm_rows, hm_cells, "difficult cases by target")
            + "</div>",
            note=_e(note),
        )
    else:
        heat = _section(
            "difficult", "Difficult cases × targets", '<p class="muted">No difficult case.</p>'
        )

    body = (
        '<header class="top"><p class="eyebrow">evalrunner leaderboard</p>'
        f"<h1>{_e(board.suite)}</h1><dl class='meta'><div><dt>Suite</dt><dd>{_e(board.suite)}"
        f"</dd></div><div><dt>Created</dt><dd>{_e(board.created_at)}</dd></div><div><dt>Targets"
        f"</dt><dd>{len(entries):,}</dd></div><div><dt>Metrics</dt><dd>{len(metrics):,}</dd>"
        f"</div></dl></header>"
        f'<div class="cards">{cards}</div>'
        + _section(
            "table",
            "Targets × metrics",
            table,
            note="average, and pass rate below it; ★ best target on the metric; ● primary "
            "metric; click a header to sort",
        )
        + _section(
            "best",
            "Best target per metric",
            f'<div class="grid">{charts}</div>' if charts else '<p class="muted">No metric.</p>',
            note="average per target; dashed: threshold; blue meets it, orange misses it",
        )
        + heat
        + f"<footer>evalrunner leaderboard · {_e(board.created_at)}</footer>"
    )
    return _page(f"Leaderboard · {board.suite}", body)
