"""``evalrunner calibrate``: compare a finished run's metric verdicts with human verdicts and
suggest the thresholds that agree best (pure computation on the run's files: no judge call,
no model, no AWS)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from evalrunner.cli.common import EXIT_INPUT, _fail, check_out_dir, out
from evalrunner.errors import EvalRunnerError
from evalrunner.reports.views.formatting import pct, score


def calibrate(
    details: Annotated[
        Path,
        typer.Argument(help="The run's details.xlsx or details.csv, with a human_verdict column."),
    ],
    labels: Annotated[
        Path | None,
        typer.Option(
            help="A csv/xlsx of human verdicts (case_id, optional iteration, human_verdict or "
            "'human_verdict <metric>') instead of columns in the details file."
        ),
    ] = None,
    out_dir: Annotated[
        Path, typer.Option("--out", help="Folder for calibration.json/.html and thresholds.json.")
    ] = Path("calibration"),
    bootstrap: Annotated[
        int,
        typer.Option(min=0, max=100_000, help="Bootstrap resamples for the threshold interval."),
    ] = 1000,
) -> None:
    """Compare a run's metric verdicts with human labels and suggest thresholds.

    Per metric: accuracy, Cohen's kappa, failure precision/recall, the best-agreeing
    threshold with a bootstrap interval, and the cases where metric and human disagree.
    Writes calibration.html, calibration.json and thresholds.json (the event's
    "thresholds")."""
    from evalrunner.calibrate import calibrate as run_calibration
    from evalrunner.calibrate import read_labelled_run
    from evalrunner.reports.views.html import render_calibration

    try:
        check_out_dir(out_dir)
        rows = read_labelled_run(details, labels)
        result = run_calibration(
            rows,
            source=str(details),
            labels_source=str(labels) if labels else None,
            rounds=bootstrap,
        )
    except EvalRunnerError as exc:
        raise _fail(exc, EXIT_INPUT) from None
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "calibration.json").write_text(result.model_dump_json(indent=2) + "\n", "utf-8")
    (out_dir / "thresholds.json").write_text(
        json.dumps(result.thresholds(), indent=2) + "\n", "utf-8"
    )
    (out_dir / "calibration.html").write_text(render_calibration(result), "utf-8")

    table = Table(title="agreement with the human verdicts")
    for col in ("Metric", "Rows", "Accuracy", "Kappa", "Fail P/R", "Threshold", "Suggested"):
        table.add_column(col)
    for m in result.metrics:
        suggested = (
            f"{score(m.best_threshold)} [{score(m.interval_low)}, {score(m.interval_high)}]"
            if m.best_threshold is not None and m.note is None
            else (m.note or "—")
        )
        table.add_row(
            escape(m.metric),
            str(m.compared),
            pct(m.accuracy),
            score(m.kappa),
            f"{pct(m.failure_precision)} / {pct(m.failure_recall)}",
            score(m.threshold),
            escape(suggested),
        )
    out.print(table)
    out.print(
        f"wrote {out_dir / 'calibration.html'} and {out_dir / 'thresholds.json'}", markup=False
    )
