"""The notebook view of a run (``EvalRun._repr_html_``): a compact block a Jupyter cell shows
inline, from the same autoescaped template environment as report.html. It cannot carry the
report's stylesheet and script (a notebook page is not ours), so it keeps to inline styles
and links to the full report."""

from __future__ import annotations

from pathlib import Path

from evalrunner.reports.summary import RunSummary
from evalrunner.reports.views.html import _environment

#: How many problems the notebook view lists (the report has them all).
NOTEBOOK_PROBLEMS = 5


def render_notebook(summary: RunSummary, report_path: Path) -> str:
    """HTML for a notebook cell: verdict, per-metric averages and pass rates, gates, the
    regression verdict, the top problems, and the report's path."""
    answered = summary.answered_runs()
    return (
        _environment()
        .get_template("notebook.html.j2")
        .render(
            summary=summary,
            verdict=summary.verdict,
            answered=answered,
            problems=summary.problems[:NOTEBOOK_PROBLEMS],
            report_path=str(report_path),
            report_uri=report_path.resolve().as_uri(),
        )
    )


__all__ = ["NOTEBOOK_PROBLEMS", "render_notebook"]
