"""The ``leaderboard`` command: runs of one suite compared side by side (also what ``run``
writes when given several targets)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from evalrunner.cli.common import DEFAULT_OUT, EXIT_INPUT, _fail, check_out_dir, out
from evalrunner.errors import EvalRunnerError, EventError


def leaderboard(
    runs: Annotated[
        list[str],
        typer.Argument(
            help="Runs of one suite (2 or more): report.json files, or run ids of runs whose "
            "reports are under --out."
        ),
    ],
    out_dir: Annotated[Path, typer.Option("--out", help="Folder for the reports.")] = DEFAULT_OUT,
    as_json: Annotated[bool, typer.Option("--json", help="Print the leaderboard as JSON.")] = False,
) -> None:
    """Compare runs of one suite: best target per metric, hardest cases, fastest, costliest."""
    try:
        check_out_dir(out_dir)
        _leaderboard_from_runs([_report_path(r, out_dir) for r in runs], out_dir, as_json=as_json)
    except EvalRunnerError as exc:
        raise _fail(exc, EXIT_INPUT) from None


def _report_path(run: str, out_dir: Path) -> Path:
    """A report.json path as given, or the report of the run with that id under ``out_dir``."""
    path = Path(run)
    if path.is_file():
        return path
    from evalrunner.reports.writers.publish import (
        MANIFEST_NAME,
        SUMMARY_NAME,
        local_complete_sets,
        local_verified,
        read_summary,
    )

    partial = None  # a resumed run has its stopped part's set too: the finished one wins
    for folder in sorted(p for p in out_dir.glob("test-reports/*") if p.is_dir()):
        for _, manifest_path, manifest in local_complete_sets(folder):  # complete sets only
            key = manifest_path.relative_to(out_dir).as_posix()[: -len(MANIFEST_NAME)]
            summary = read_summary(local_verified(out_dir, manifest, key + SUMMARY_NAME))
            if summary is not None and summary.run_id == run:
                if not summary.partial:
                    return out_dir / summary.reports.report
                partial = out_dir / summary.reports.report
    if partial is not None:
        return partial
    raise EventError(f"{run!r} is neither a report.json file nor a run id found under {out_dir}")


def _leaderboard_from_runs(paths: list[Path], out_dir: Path, *, as_json: bool) -> None:
    from datetime import UTC, datetime

    from evalrunner.reports.analysis.leaderboard import build_leaderboard
    from evalrunner.reports.model import ReportData
    from evalrunner.reports.views.html import render_leaderboard

    runs = []
    for path in paths:
        if not path.is_file():
            raise EventError(f"{path}: no such report.json")
        try:
            runs.append(ReportData.model_validate_json(path.read_bytes()))
        except ValueError as exc:
            raise EventError(f"{path}: not an evalrunner report.json ({exc})") from None
    now = datetime.now(UTC)
    try:
        board = build_leaderboard(runs, created_at=now.isoformat(timespec="seconds"))
    except ValueError as exc:
        raise EventError(str(exc)) from None
    folder = out_dir / "test-reports" / "_leaderboard"
    folder.mkdir(parents=True, exist_ok=True)
    stem = folder / f"{now:%y%m%d-%H%M%S}-leaderboard"
    json_path, html_path = stem.with_suffix(".json"), stem.with_suffix(".html")
    json_path.write_text(board.model_dump_json(indent=2), encoding="utf-8")
    html_path.write_text(render_leaderboard(board), encoding="utf-8")
    if as_json:
        out.print_json(board.model_dump_json())
        return
    table = Table(title=f"leaderboard — {board.suite}")
    table.add_column("Metric")
    for entry in board.entries:
        table.add_column(entry.target, justify="right")
    table.add_row("verdict", *(escape(e.verdict or "—") for e in board.entries))
    for info in board.metrics:
        if not info.primary:
            continue
        cells = []
        for entry in board.entries:
            value = entry.averages.get(info.metric)
            text = "—" if value is None else f"{value:.3f}"
            best = board.best_per_metric.get(info.metric) == entry.target
            cells.append(f"[bold green]{text}[/]" if best else text)
        table.add_row(escape(info.metric), *cells)
    out.print(table)
    if board.difficult_cases:
        hardest = board.difficult_cases[0]
        out.print(
            f"most difficult case: {hardest.case_id} (failed by {', '.join(hardest.failed_by)})",
            markup=False,
        )
    for label, name in (("fastest", board.fastest), ("costliest", board.costliest)):
        if name:
            out.print(f"{label}: {name}", markup=False)
    out.print(f"leaderboard: {html_path}", markup=False)
