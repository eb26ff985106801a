"""What the leaderboard page shows, decided here and handed to ``leaderboard.html.j2``."""

from __future__ import annotations

from typing import Any

from evalrunner.reports.model import Leaderboard
from evalrunner.reports.views import charts
from evalrunner.reports.views.cases import ordered
from evalrunner.reports.views.charts import Chart, HeatCell, HeatRow
from evalrunner.reports.views.formatting import pct, short

#: Rows of the difficult-case × target heatmap of the leaderboard.
LEADERBOARD_ROWS = 100


def difficult_heatmap(board: Leaderboard) -> tuple[Chart, str] | None:
    """The difficult case × target chart and its note; None without a difficult case."""
    difficult = board.difficult_cases
    if not difficult or not board.entries:
        return None
    shown = difficult[:LEADERBOARD_ROWS]
    rows = [
        HeatRow(
            d.case_id,
            f"{d.case_id}: {short(d.question, 140)} — failed by {', '.join(d.failed_by) or 'none'}",
        )
        for d in shown
    ]
    cells = [
        [
            HeatCell(
                d.pass_share.get(e.target),
                pct(d.pass_share.get(e.target)) if e.target in d.pass_share else "",
                f"{d.case_id} · {e.target}: "
                + (
                    f"passed {pct(d.pass_share[e.target])} of iterations × primary metrics"
                    if e.target in d.pass_share
                    else "not run"
                ),
            )
            for e in board.entries
        ]
        for d in shown
    ]
    note = "most difficult first; colour and number: share of iterations × primary metrics passed"
    if len(difficult) > len(shown):
        note += f"; showing {len(shown)} of {len(difficult)}"
    targets = [e.target for e in board.entries]
    return charts.heatmap(targets, rows, cells, "difficult cases by target"), note


def leaderboard_context(board: Leaderboard) -> dict[str, Any]:
    """Everything ``leaderboard.html.j2`` renders."""
    metrics = ordered(board.metrics)
    return {
        "board": board,
        "metrics": metrics,
        "highlights": [
            ("Fastest", board.fastest, "lowest median latency"),
            ("Slowest", board.slowest, "highest median latency"),
            ("Cheapest", board.cheapest, "lowest total cost"),
            ("Costliest", board.costliest, "highest total cost"),
        ],
        "bars": [
            (m, board.best_per_metric.get(m.metric), charts.leader_bars(board, m)) for m in metrics
        ],
        "heatmap": difficult_heatmap(board),
    }
