"""The console report of a finished run: the metric table (stacked on a narrow terminal),
gates, findings, the report files and the verdict, last, with its exit code. Apart from
:mod:`.running` (the commands that start runs) because it is what a run prints, not how it
runs; the leaderboard and the ``--json`` output are elsewhere."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.console import Group, RenderableType
from rich.markup import escape
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text

from evalrunner.cli.common import out
from evalrunner.jsonout import dump_json

if TYPE_CHECKING:
    from evalrunner.engine.run_types import RunResult
    from evalrunner.reports.summary import RunSummary


def report(result: RunResult, *, as_json: bool) -> int:
    """Print a finished run; its exit code is its verdict's (reports/verdict.py)."""
    summary = result.summary
    if as_json:  # the execution's output, as the state machine returned it
        out.print_json(dump_json(result.output))
        return summary.verdict.exit_code
    out.print(metrics_view(summary, out.width))
    if summary.items and not summary.answered_runs():
        out.print(
            "[bold red]no target call succeeded[/]: nothing was measured (exit code 4); "
            "see the error column of details.csv"
        )
    elif summary.target_errors or summary.task_failures:
        out.print(
            f"[yellow]{summary.target_errors} target errors, "
            f"{summary.task_failures} failed tasks (see details.csv)[/]"
        )
    for failure in summary.step_failures:
        out.print(f"[yellow]step failure: {escape(failure)}[/]")
    for gate in summary.gates:
        mark = "[green]pass[/]" if gate.passed else "[red]FAIL[/]"
        avg = "—" if gate.average is None else f"{gate.average:.3f}"
        op = ">=" if gate.higher_is_better else "<="
        out.print(f"gate {escape(gate.gate)} {op} {gate.threshold}: {avg} {mark}")
    print_findings(summary)  # a regression gate with no baseline: a note of the verdict
    out.print("reports:")
    for path in result.files:
        out.print(f"  {path}", markup=False, highlight=False)
    out.print(f"finished in {result.seconds:.1f} s")
    print_verdict(summary)
    return summary.verdict.exit_code


def print_verdict(summary: RunSummary) -> None:
    """The run's verdict, last (what CI logs end on): headline, exit code, reasons, notes."""
    verdict = summary.verdict
    colour = {"passed": "green", "partial": "yellow"}.get(verdict.outcome, "red")
    out.print(
        f"[bold {colour}]verdict: {verdict.headline}[/] (exit code {verdict.exit_code}, "
        f"--fail-on {verdict.policy.fail_on})"
    )
    for reason in verdict.reasons:
        out.print(f"  - {reason}", highlight=False, markup=False)
    for note in verdict.notes:
        out.print(f"  - note: {note}", highlight=False, markup=False)


#: The metric table's columns; at widths where they do not fit unbroken, each metric is two
#: lines instead (:func:`metrics_view`).
COLUMNS = (
    "Metric",
    "Evaluator",
    "Average",
    "Pass rate",
    "Threshold",
    "Count",
    "Skipped",
    "Errored",
)


def metrics_view(summary: RunSummary, width: int) -> RenderableType:
    """The metrics of a run for a terminal ``width`` columns wide: a table when every column
    fits unbroken, else stacked, one metric per two lines (an 80-column terminal, a CI log
    with no TTY): a metric's name is never broken or cut to ``Evalua…``."""
    title = f"{summary.target} — {summary.suite} ({summary.items} runs of {summary.cases} cases)"
    rows = [
        (
            m,
            "—" if m.average is None else f"{m.average:.3f}",
            "—" if m.pass_rate is None else f"{m.pass_rate:.0%}",
        )
        for m in summary.metrics
    ]
    table = Table(title=Text(title), title_justify="left")
    for col in COLUMNS:
        right = col not in ("Metric", "Evaluator")
        table.add_column(col, justify="right" if right else "left", no_wrap=True)
    for m, avg, rate in rows:
        table.add_row(
            Text(m.metric, style="bold" if m.primary else ""),
            Text(m.evaluator),
            avg,
            rate,
            f"{m.threshold:.2f}",
            str(m.count),
            str(m.skipped),
            str(m.errored),
        )
    if Measurement.get(out, out.options.update_width(10_000), table).maximum <= width:
        return table
    lines = [Text(title, style="bold")]
    for m, avg, rate in rows:
        name = Text(m.metric, style="bold" if m.primary else "")
        if m.evaluator != m.metric:
            name.append(f" ({m.evaluator})", style="")
        lines.append(name)
        lines.append(
            Text(
                f"  average {avg} · pass rate {rate} ({'≥' if m.higher_is_better else '≤'} "
                f"{m.threshold:.2f}) · {m.count} scored, {m.skipped} skipped, "
                f"{m.errored} errored"
            )
        )
    return Group(*lines)


def print_findings(summary: RunSummary) -> None:
    regression = summary.regression
    if regression:
        colour = {"regression": "red", "improvement": "green"}.get(regression.verdict, "white")
        out.print(
            f"[bold {colour}]{regression.verdict}[/] against run "
            f"{escape(regression.baseline_run_id)} ({regression.baseline_started_at})"
        )
        for reason in regression.reasons:
            out.print(f"  - {reason}", highlight=False, markup=False)
    for rob in summary.robustness:
        score = "—" if rob.score is None else f"{rob.score:.2f}"
        what = "must flip" if rob.expect_flip else "held"
        out.print(
            f"robustness under {rob.name}: {score} ({rob.held} of {rob.compared} cases {what}, "
            f"{rob.broken} broke, {rob.fixed} fixed)",
            highlight=False,
            markup=False,
        )
    # A baseline that was skipped is always named: a regression gate rests on it.
    for problem in summary.problems:
        if problem.type == "baseline_ignored":
            out.print(f"[yellow]{escape(problem.description)}[/]", highlight=False)
    problems = [p for p in summary.problems if p.type != "baseline_ignored"]
    high = [p for p in problems if p.severity == "high"]
    if problems:
        out.print(f"{len(problems)} problems ({len(high)} high) — see problems.json:")
        for problem in problems[:5]:
            out.print(
                f"  - [{problem.severity}] {problem.description}",
                highlight=False,
                markup=False,
            )
            if problem.type in ("model_unavailable", "model_judged"):  # the fix is the point
                out.print(f"    {problem.suggested_action}", highlight=False, markup=False)
