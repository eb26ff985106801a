"""The matrix summary of a project run: one table per (target × suite) cell — its verdict,
the pass rates of its primary metrics, its gates — and one exit code, the worst cell's.

Built once, as a typed model, from each cell's :class:`~evalrunner.reports.summary.RunSummary`
(whose verdict it reads, never recomputes); ``matrix.json`` is the model dumped and
``matrix.html`` is rendered from it by an autoescaping Jinja2 template, like the other
reports, so the two cannot disagree."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape
from pydantic import BaseModel, Field

from evalrunner.jsonout import dump_json
from evalrunner.reports.model import Gate
from evalrunner.reports.summary import RunSummary

#: The matrix summary's files in the output folder, beside one folder per target.
MATRIX_FILES = ("matrix.json", "matrix.html")
#: The exit code of a cell whose run failed without a verdict (README exit-code table).
EXIT_RUN_FAILED = 3


class CellMetric(BaseModel):
    """A primary metric of a cell: how it did against its threshold."""

    metric: str
    average: float | None
    pass_rate: float | None
    threshold: float
    higher_is_better: bool


class CellSummary(BaseModel):
    """One cell of the matrix, as its run's summary says."""

    target: str
    suite: str
    #: the cell's report folder, relative to the matrix summary
    folder: str
    outcome: str
    headline: str
    exit_code: int
    reasons: list[str] = Field(default_factory=list)
    run_id: str | None = None
    #: report.html, relative to the matrix summary; None when the run wrote no reports
    report: str | None = None
    cases: int = 0
    answered: int | None = None
    target_errors: int = 0
    metrics: list[CellMetric] = Field(default_factory=list)
    gates: list[Gate] = Field(default_factory=list)

    @classmethod
    def of_run(cls, target: str, suite: str, folder: str, summary: RunSummary) -> CellSummary:
        verdict = summary.verdict
        return cls(
            target=target,
            suite=suite,
            folder=folder,
            outcome=verdict.outcome,
            headline=verdict.headline,
            exit_code=verdict.exit_code,
            reasons=verdict.reasons,
            run_id=summary.run_id,
            report=f"{folder}/{summary.reports.html}",
            cases=summary.cases,
            answered=summary.answered,
            target_errors=summary.target_errors,
            metrics=[
                CellMetric(
                    metric=m.metric,
                    average=m.average,
                    pass_rate=m.pass_rate,
                    threshold=m.threshold,
                    higher_is_better=m.higher_is_better,
                )
                for m in summary.metrics
                if m.primary and m.iteration is None
            ],
            gates=summary.gates,
        )

    @classmethod
    def failed(cls, target: str, suite: str, folder: str, error: str) -> CellSummary:
        """A cell whose run failed before it had a verdict (exit code 3)."""
        return cls(
            target=target,
            suite=suite,
            folder=folder,
            outcome="failed to run",
            headline="RUN FAILED",
            exit_code=EXIT_RUN_FAILED,
            reasons=[error],
        )


class MatrixSummary(BaseModel):
    """A project run: every cell, and the exit code of the whole (the worst cell's)."""

    project: str
    finished_at: str
    cells: list[CellSummary]
    exit_code: int
    #: cells the run did not reach (it was stopped), as "target × suite"
    not_run: list[str] = Field(default_factory=list)
    #: why the matrix stopped before its last cell (Ctrl-C, SIGTERM); None when it did not
    stopped_reason: str | None = None

    @classmethod
    def of_cells(
        cls,
        project: Path,
        cells: list[CellSummary],
        not_run: list[str] | None = None,
        stopped_reason: str | None = None,
    ) -> MatrixSummary:
        """The exit code is the worst cell's, and at least 3 when some cells did not run: a
        matrix stopped part-way never passes."""
        codes = [c.exit_code for c in cells] + ([EXIT_RUN_FAILED] if not_run else [])
        return cls(
            project=str(project),
            finished_at=datetime.now(UTC).isoformat(timespec="seconds"),
            cells=cells,
            exit_code=max(codes or [EXIT_RUN_FAILED]),
            not_run=not_run or [],
            stopped_reason=stopped_reason,
        )


def render_html(matrix: MatrixSummary) -> str:
    env = Environment(
        loader=PackageLoader("evalrunner.project", "templates"),
        autoescape=select_autoescape(default=True, default_for_string=True),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["number"] = _number
    env.filters["percent"] = _percent
    return env.get_template("matrix.html.j2").render(matrix=matrix)


def _number(value: float | None) -> str:
    return "—" if value is None else f"{value:.3f}"


def _percent(value: float | None) -> str:
    return "—" if value is None else f"{value:.0%}"


def write_matrix(matrix: MatrixSummary, folder: Path) -> list[Path]:
    """``matrix.json`` and ``matrix.html`` in ``folder``; their paths."""
    folder.mkdir(parents=True, exist_ok=True)
    json_path, html_path = (folder / name for name in MATRIX_FILES)
    json_path.write_text(dump_json(matrix.model_dump(mode="json"), indent=2) + "\n", "utf-8")
    html_path.write_text(render_html(matrix), "utf-8")
    return [html_path, json_path]
