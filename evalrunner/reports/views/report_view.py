"""What each section of report.html shows, decided here and handed to ``report.html.j2``.

The template only lays out and escapes; every choice (what is ranked where, what is folded,
what is cut and how much is left out, the chart geometry) is made in these functions, which
return the run's text untouched (never markup).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from evalrunner.evaluators.base import MetricResult
from evalrunner.reports.model import (
    CaseFlip,
    CaseRow,
    MetricDelta,
    MetricInfo,
    MetricStats,
    Regression,
    ReportData,
)
from evalrunner.reports.views import charts
from evalrunner.reports.views.cases import (
    Case,
    aggregate,
    iteration_stats,
    ordered,
    primary,
    run_stats,
    split,
    verdict,
)
from evalrunner.reports.views.charts import Chart, HeatCell, HeatRow, Key, key
from evalrunner.reports.views.conversation_view import conversations_view
from evalrunner.reports.views.formatting import (
    comparator,
    count,
    duration,
    money,
    ms,
    pct,
    percentile,
    plural,
    score,
    short,
    signed,
)
from evalrunner.reports.views.robustness_view import robustness_view
from evalrunner.reports.views.run_figures import config_value, summary_blocks
from evalrunner.reports.views.steps_view import agent_steps_view

#: How many of the worst cases get a full card (question, answers, contexts, reasons).
WORST_CASES = 15
#: How many of them are shown open; the others are one line each until clicked.
WORST_OPEN = 5
#: Rows of the case × metric heatmap (worst first); the rest is counted in a note.
HEATMAP_ROWS = 200
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


@dataclass(frozen=True)
class Card:
    """A figure card under the header: name, value, the line under it, alert border."""

    key: str
    value: str
    sub: str
    alert: bool = False


def figures(data: ReportData) -> list[Card]:
    rows = data.rows
    latencies = [r.latency_ms for r in rows if r.latency_ms is not None]
    tokens_in = [r.input_tokens for r in rows if r.input_tokens is not None]
    tokens_out = [r.output_tokens for r in rows if r.output_tokens is not None]
    costs = [r.cost for r in rows if r.cost is not None]
    target_errors = sum(1 for r in rows if r.status == "target_error")
    task_failed = sum(1 for r in rows if r.status == "task_failed")
    scored = {r.case_id for r in rows if any(x.status == "scored" for x in r.results)}
    tokens = tokens_in or tokens_out
    return [
        Card("Scored cases", f"{len(scored):,}", f"of {len({r.case_id for r in rows}):,}"),
        Card(
            "Target errors",
            f"{target_errors:,}",
            f"{task_failed:,} task failures" if task_failed else "runs that got no answer",
            alert=target_errors + task_failed > 0,
        ),
        Card(
            "Latency median",
            ms(percentile(latencies, 0.5)),
            f"p95 {ms(percentile(latencies, 0.95))}",
        ),
        Card(
            "Tokens",
            count(sum(tokens_in) + sum(tokens_out)) if tokens else "—",
            f"{count(sum(tokens_in))} in · {count(sum(tokens_out))} out"
            if tokens
            else "not reported",
        ),
        Card("Cost", money(sum(costs)) if costs else "—", "total" if costs else "not reported"),
    ]


# --- regression -----------------------------------------------------------------------------


@dataclass(frozen=True)
class DeltaRow:
    delta: MetricDelta
    cls: str
    status: str
    interval: str
    chart: Chart


@dataclass(frozen=True)
class RegressionView:
    reg: Regression
    worse: list[str]
    rows: list[DeltaRow]  # significant changes, worse first
    quiet: list[DeltaRow]  # no significant change: folded
    new_failures: list[tuple[str, str]]  # (case id, its metrics), capped
    new_more: int
    new_cases: int
    fixed: list[tuple[str, str]]
    fixed_more: int
    fixed_cases: int


def _flips(flips: Sequence[CaseFlip]) -> tuple[list[tuple[str, str]], int, int]:
    by_case: dict[str, list[str]] = {}
    for flip in flips:
        by_case.setdefault(flip.case_id, []).append(flip.metric)
    items = [(case, ", ".join(metrics)) for case, metrics in by_case.items()]
    return items[:FLIPS_SHOWN], max(0, len(items) - FLIPS_SHOWN), len(items)


def regression(reg: Regression) -> RegressionView:
    deltas = sorted(reg.deltas, key=lambda d: (not d.worse, not d.significant))
    span = max(
        [abs(v) for d in deltas for v in (d.ci_low, d.ci_high, d.delta) if v is not None] + [1e-9]
    )
    rows: list[DeltaRow] = []
    quiet: list[DeltaRow] = []
    for d in deltas:
        interval = (
            f"[{signed(d.ci_low)}, {signed(d.ci_high)}]"
            if d.ci_low is not None and d.ci_high is not None
            else "—"
        )
        row = DeltaRow(
            d,
            "worse" if d.worse else ("better" if d.significant else ""),
            "worse" if d.worse else ("better" if d.significant else "no significant change"),
            interval,
            charts.interval(d, span),
        )
        (rows if d.significant or d.worse else quiet).append(row)
    new, new_more, new_cases = _flips(reg.new_failures)
    fixed, fixed_more, fixed_cases = _flips(reg.fixed)
    return RegressionView(
        reg, [d.metric for d in reg.deltas if d.worse], rows, quiet,
        new, new_more, new_cases, fixed, fixed_more, fixed_cases,
    )  # fmt: skip


# --- metrics and distributions --------------------------------------------------------------


@dataclass(frozen=True)
class MetricRow:
    info: MetricInfo
    stats: MetricStats | None
    by_iteration: str  # pass rates of the iterations, "75% · 66.7%"


@dataclass(frozen=True)
class MetricsView:
    bars: Chart | None
    other_bars: Chart | None
    others: int
    rows: list[MetricRow]
    multi: bool  # several iterations: instability and per-iteration columns


def metrics(data: ReportData, stats: dict[Key, MetricStats]) -> MetricsView:
    per_iteration = iteration_stats(data)
    rows = [
        MetricRow(
            info,
            stats.get(key(info)),
            " · ".join(pct(x.pass_rate) for x in per_iteration.get(key(info), [])) or "—",
        )
        for info in ordered(data.metrics)
    ]
    main, others = split(data.metrics)
    return MetricsView(
        charts.metric_bars(main, stats),
        charts.metric_bars(others, stats) if others else None,
        len(others),
        rows,
        bool(data.iterations > 1 and per_iteration),
    )


def distributions(
    data: ReportData, stats: dict[Key, MetricStats]
) -> tuple[list[charts.Histogram], list[charts.Histogram]]:
    """(histograms of the primary metrics, of the others): metrics with a score only."""
    by_metric: dict[Key, list[MetricResult]] = {}
    for row in data.rows:
        for r in row.results:
            by_metric.setdefault(key(r), []).append(r)

    def histograms(metrics: Sequence[MetricInfo]) -> list[charts.Histogram]:
        return [
            charts.histogram(info, by_metric[key(info)], stats.get(key(info)))
            for info in metrics
            if any(
                r.status == "scored" and r.score is not None for r in by_metric.get(key(info), [])
            )
        ]

    main, others = split(data.metrics)
    return histograms(main), histograms(others)


# --- heatmap --------------------------------------------------------------------------------


def _case_tip(case: Case) -> str:
    question = case.rows[0].question if case.rows else ""
    status = "; ".join(sorted({r.status for r in case.rows} - {"ok"}))
    return f"{case.case_id}: {short(question, 140)}" + (f" [{status}]" if status else "")


def _cell(case: Case, info: MetricInfo, iterations: int) -> HeatCell:
    cell = case.cell(key(info))
    head = f"{case.case_id} · {info.metric}"
    if not cell.results:
        reason = next((r.error for r in case.rows if r.error), None)
        tip = f"{head}: not evaluated" + (f" ({short(reason, 200)})" if reason else "")
        return HeatCell(None, "", tip)
    share = cell.share
    if share is None:
        reason = next((r.reason for r in cell.results), "")
        return HeatCell(None, "–", f"{head}: skipped — {short(reason, 200)}")
    mean = cell.mean
    parts = [f"{head}: passed {cell.passed}/{cell.judged}"]
    if mean is not None:
        parts.append(f"mean score {score(mean)}")
        if len(cell.scores) > 1:
            parts.append("scores " + ", ".join(score(x) for x in cell.scores))
    errors = sum(1 for r in cell.results if r.status == "error")
    if errors:
        parts.append(f"{errors} evaluator error(s)")
    parts.append(f"threshold {comparator(info.higher_is_better)} {score(info.threshold)}")
    if iterations > 1:
        parts.append(f"{len(cell.results)} iteration(s)")
    failing = next((r for r in cell.results if r.status == "error" or r.success is False), None)
    if failing is not None:
        parts.append(f"reason: {short(failing.reason, 200)}")
    return HeatCell(share, score(mean) if mean is not None else "err", " · ".join(parts))


def heatmap(
    data: ReportData, cases: Sequence[Case], anchors: dict[str, str]
) -> tuple[Chart, str] | None:
    """The case × primary metric chart and its note; None when there is nothing to show."""
    columns = primary(data.metrics)
    if not cases or not columns:
        return None
    shown = cases[:HEATMAP_ROWS]
    rows = [HeatRow(c.case_id, _case_tip(c), anchors.get(c.case_id)) for c in shown]
    cells = [[_cell(c, info, data.iterations) for info in columns] for c in shown]
    note = (
        "worst first; colour: share of iterations passed; number: mean score; hover a cell "
        "for the reason"
    )
    if len(cases) > len(shown):
        note += (
            f". Showing the {len(shown):,} worst of {len(cases):,} cases; details.csv has them all"
        )
    chart = charts.heatmap([m.metric for m in columns], rows, cells, "cases by primary metric")
    return chart, note


# --- worst cases ----------------------------------------------------------------------------


@dataclass(frozen=True)
class FailingRow:
    """A failing metric of a worst case: its score per iteration and its distinct reasons."""

    info: MetricInfo
    scores: str
    reasons: list[tuple[int, str]]  # (iteration, reason)


@dataclass
class WorstCard:
    case: Case
    anchor: str
    rank: int
    open: bool
    summary: str
    statuses: list[str]
    first: CaseRow  # question and expected answer
    shown: CaseRow  # the iteration whose answer is shown: the worst one
    primary_rows: list[FailingRow] = field(default_factory=list)
    other_rows: list[FailingRow] = field(default_factory=list)
    other_answers: list[CaseRow] = field(default_factory=list)
    contexts: list[str] = field(default_factory=list)
    contexts_more: int = 0
    facts: list[str] = field(default_factory=list)

    @property
    def iterations(self) -> int:
        return len(self.case.rows)

    @property
    def errors(self) -> list[tuple[int, str]]:
        return [(r.iteration, r.error) for r in self.case.rows if r.error]


def _failing_row(case: Case, info: MetricInfo) -> FailingRow | None:
    cell = case.cell(key(info))
    if not any(r.status == "error" or r.success is False for r in cell.results):
        return None
    scores = " / ".join(
        (score(r.score) if r.status == "scored" else r.status) for r in cell.results
    )
    reasons: list[tuple[int, str]] = []
    for row in case.rows:
        for r in row.results:
            failed = r.status == "error" or r.success is False
            if key(r) == key(info) and failed and all(r.reason != x for _, x in reasons):
                reasons.append((row.iteration, r.reason))
    return FailingRow(info, scores, reasons)


def worst_card(case: Case, anchor: str, rank: int, data: ReportData) -> WorstCard:
    metrics = ordered(data.metrics)
    primary_keys = {key(m) for m in primary(data.metrics)}

    def row_badness(row: CaseRow) -> tuple[int, int, int]:
        fails = sum(
            1
            for r in row.results
            if key(r) in primary_keys and (r.status == "error" or r.success is False)
        )
        return (row.answer is None, -fails, row.iteration)

    shown = min(case.rows, key=row_badness)
    failing_names = [m.metric for m in metrics if key(m) in set(case.failing)]
    summary = (
        f"fails {len(case.failing)} of {len(primary_keys)} primary metrics"
        if case.failing
        else "primary metrics pass"
    )
    if failing_names:
        summary += ": " + ", ".join(failing_names)
    card = WorstCard(
        case=case,
        anchor=anchor,
        rank=rank,
        open=rank <= WORST_OPEN,
        summary=summary,
        statuses=[s.replace("_", " ") for s in sorted({r.status for r in case.rows} - {"ok"})],
        first=case.rows[0],
        shown=shown,
    )
    # every failing metric: the primary ones in view, the others folded under them
    for info in metrics:
        failing = _failing_row(case, info)
        if failing is not None:
            (card.primary_rows if key(info) in primary_keys else card.other_rows).append(failing)
    others = [r for r in case.rows if r is not shown and r.answer is not None]
    if others and any(r.answer != shown.answer for r in others):
        card.other_answers = others
    card.contexts = shown.contexts[:CONTEXTS_SHOWN]
    card.contexts_more = max(0, len(shown.contexts) - CONTEXTS_SHOWN)
    if shown.latency_ms is not None:
        card.facts.append(f"latency {ms(shown.latency_ms)}")
    if shown.input_tokens is not None or shown.output_tokens is not None:
        card.facts.append(
            f"tokens {count(shown.input_tokens)} in / {count(shown.output_tokens)} out"
        )
    if shown.cost is not None:
        card.facts.append(f"cost {money(shown.cost)}")
    return card


def worst_note(data: ReportData, shown: int) -> str:
    failing = sum(1 for c in data.rows if c.status != "ok")
    note = (
        "ranked by primary metrics failed (a target error counts as one), then pass share, "
        f"then mean score; top {shown}"
    )
    if failing:
        note += f"; {plural(failing, 'run')} without an answer"
    return note


# --- the page -------------------------------------------------------------------------------


def category_table(data: ReportData) -> dict[str, Any] | None:
    """Primary metrics × the categories the suite uses: each cell the average and pass rate
    over the category's cases ("–" when none was scored); None when no case has a category."""
    if not data.categories:
        return None
    columns = [m.metric for m in data.metrics if m.primary]
    cells: dict[str, dict[str, str]] = {}
    for c in data.categories:
        if c.metric in columns:
            text = (
                "–"
                if c.count == 0 and c.errored == 0
                else f"{score(c.average)} · {pct(c.pass_rate)}"
            )
            cells.setdefault(c.category, {})[c.metric] = text
    rows = [(category, [by.get(m, "–") for m in columns]) for category, by in cells.items()]
    return {"columns": columns, "rows": rows}


def report_context(data: ReportData) -> dict[str, Any]:
    """Everything ``report.html.j2`` renders, in the order of the page."""
    stats = run_stats(data)
    cases = sorted(aggregate(data.rows, primary(data.metrics)), key=Case.sort_key)
    worst = [c for c in cases if c.badness][:WORST_CASES]
    anchors = {c.case_id: f"case-{i + 1}" for i, c in enumerate(worst)}
    banner = verdict(data)
    conversations = conversations_view(data)
    agent_steps = agent_steps_view(data)
    toc = []
    if data.regression is not None:
        toc.append(("regression", "Regression"))
    if data.gates:
        toc.append(("gates", "Gates"))
    toc.append(("problems", "Problems"))
    if data.weak_spots_method:
        toc.append(("weak-spots", "Weak spots"))
    toc += [
        ("metrics", "Metrics"),
        *([("robustness", "Robustness")] if data.robustness else []),
        *([("conversations", "Conversations")] if conversations.conversations else []),
        ("distributions", "Distributions"),
        ("heatmap", "Heatmap"),
        ("worst", "Worst cases"),
        *([("agent-steps", "Agent steps")] if agent_steps else []),
    ]
    if data.run_metrics:
        toc.append(("run-figures", "Run-level figures"))
    by_category = category_table(data)
    if by_category is not None:
        toc.append(("categories", "By category"))
    toc.append(("config", "Configuration"))
    severity = {"high": 0, "medium": 1, "low": 2}
    return {
        "data": data,
        "title": f"{banner.headline} · {data.target} · {data.suite}",
        "verdict": banner,
        "reasons": [short(r, BANNER_CHARS) for r in banner.reasons[:BANNER_LINES]],
        "more_reasons": max(0, len(banner.reasons) - BANNER_LINES),
        "duration": duration(data.started_at, data.finished_at),
        # a conversation is one case, not one per turn
        "cases": len({r.case_id for r in data.rows if r.turn is None}),
        "toc": toc,
        "cards": figures(data),
        "regression": regression(data.regression) if data.regression is not None else None,
        "metric_infos": {m.metric: m for m in data.metrics},
        "problems": sorted(data.problems, key=lambda p: severity.get(p.severity, 3)),
        "metrics": metrics(data, stats),
        "robustness": robustness_view(data),
        "conversations": conversations,
        "histograms": distributions(data, stats),
        "heatmap": heatmap(data, cases, anchors),
        "worst": [worst_card(c, anchors[c.case_id], i + 1, data) for i, c in enumerate(worst)],
        "worst_note": worst_note(data, len(worst)),
        "agent_steps": agent_steps,
        "run_figures": [(name, summary_blocks(s)) for name, s in data.run_metrics.items()],
        "by_category": by_category,
        "config": [(k, *config_value(v)) for k, v in data.config.items()],
        "limits": {
            "text": TEXT_LIMIT,
            "context": CONTEXT_LIMIT,
            "reason": REASON_LIMIT,
            "json": JSON_LIMIT,
            "affected": AFFECTED_SHOWN,
        },
    }
