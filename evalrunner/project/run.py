"""Running a project: every chosen cell, as the CLI (``evalrunner run``) and the Python API
(``evalrunner.run_project``) both do it, so the two cannot differ.

First every cell is checked (its suite read as Prepare will) and every target pre-flighted
once, so bad input or a dead target stops the matrix before anything is spent; then each
cell runs in turn, writing its normal report set in ``<output>/<target>/<suite>/``; then the
matrix summary is written. What a surface shows while that happens is its own (``Hooks``)."""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from evalrunner.errors import ExecutionFailed, PartialRun, RunStopped
from evalrunner.project.cells import Cell, Overrides, Project, fetch_s3_suites, load_project
from evalrunner.project.matrix import CellSummary, MatrixSummary, write_matrix
from evalrunner.project.source import ProjectError

if TYPE_CHECKING:
    from evalrunner.engine.run_types import RunResult


class Execute(Protocol):
    """Runs one cell's event locally (``launch.run_local``, or the CLI's wrapper of it with
    its progress bar) and returns the finished run."""

    def __call__(
        self, event: dict[str, object], suite: Path, out_dir: Path, resume: str | None
    ) -> RunResult: ...


@dataclass
class Hooks:
    """What a surface shows as the matrix runs (each optional): before the cells run, as a
    cell starts, when it finished, when its run failed."""

    checked: Callable[[Project], None] | None = None
    starting: Callable[[Cell], None] | None = None
    finished: Callable[[Cell, RunResult], None] | None = None
    failed: Callable[[Cell, ExecutionFailed], None] | None = None


@dataclass
class ProjectRun:
    """A finished project run: the matrix summary (its ``exit_code`` the worst cell's), the
    cells' runs (those that finished, or stopped part-way with reports) and the files of
    the matrix summary."""

    project: Project
    matrix: MatrixSummary
    results: dict[str, RunResult] = field(default_factory=dict)
    files: list[Path] = field(default_factory=list)


def run_cells(
    path: Path,
    overrides: Overrides,
    execute: Execute,
    *,
    preflight: bool = True,
    hooks: Hooks | None = None,
    before_run: Callable[[Project], None] | None = None,
) -> ProjectRun:
    """Run the project file at ``path``. Bad input raises an
    :class:`~evalrunner.errors.EvalRunnerError` and a failed pre-flight
    :class:`~evalrunner.preflight.PreflightFailed`, before any cell runs. A cell whose run
    fails is recorded (exit 3) and the matrix goes on; a stopped run (SIGTERM, Ctrl-C) stops
    the matrix, its other cells listed as not run. ``before_run``: more checks of the
    loaded project before anything is called (the CLI's --junit-xml paths).
    ``overrides.resume``: continue that stopped run of the one cell picked (no pre-flight:
    the target answered before)."""
    from evalrunner.cli.common import check_out_dir
    from evalrunner.launch import check_resumable, check_suite, preflight_local

    hooks = hooks or Hooks()
    with tempfile.TemporaryDirectory(prefix="evalrunner-project-") as scratch:
        project = load_project(path, overrides)
        if overrides.resume and len(project.cells) != 1:
            raise ProjectError(
                "--resume continues one cell's run: pick it with --target NAME --suite NAME "
                f"(this would run {len(project.cells)} cells)"
            )
        if overrides.output is None:  # the file's output key gave the folder
            where = f"{project.source.where(('output',))}: output"
            check_out_dir(project.output, where, 'output = "reports"')
        else:
            check_out_dir(project.output)
        if before_run is not None:
            before_run(project)
        fetch_s3_suites(project, Path(scratch))
        for cell in project.cells:  # every cell, before the first run starts
            check_suite(cell.suite_path, cell.event)
        if hooks.checked is not None:
            hooks.checked(project)
        if overrides.resume:  # bad input before anything is called
            (cell,) = project.cells
            check_resumable(cell.event, cell.suite_path, cell.out_dir, overrides.resume)
        elif preflight:  # each target answers once before the first cell runs
            probed: set[str] = set()
            for cell in project.cells:
                if cell.target not in probed:
                    probed.add(cell.target)
                    preflight_local(cell.event, cell.suite_path)
        cells, results, not_run, reason = _each_cell(project, execute, hooks, overrides.resume)
    matrix = MatrixSummary.of_cells(project.path, cells, not_run, reason)
    files = write_matrix(matrix, project.output)
    return ProjectRun(project=project, matrix=matrix, results=results, files=files)


def _each_cell(
    project: Project, execute: Execute, hooks: Hooks, resume: str | None
) -> tuple[list[CellSummary], dict[str, RunResult], list[str], str | None]:
    """Each cell in turn; the cells run, their runs, the cells not reached and why. Ctrl-C
    or SIGTERM between two cells' runs (a run takes the signals over while it goes, and
    stops with its reports) stops the matrix the same way: what ran is summarised."""
    from evalrunner.engine.stopping import StopRequested, stop_on_signals

    cells: list[CellSummary] = []
    results: dict[str, RunResult] = {}
    with stop_on_signals():
        for index, cell in enumerate(project.cells):
            try:
                stopped = _one_cell(project, cell, execute, hooks, resume, cells, results)
            except StopRequested as stop:  # a cell whose summary was added still counts
                return cells, results, [c.label for c in project.cells[len(cells) :]], stop.reason
            if stopped is not None:
                later = [c.label for c in project.cells[index + 1 :]]
                return cells, results, later, stopped if later else None
    return cells, results, [], None


def _one_cell(
    project: Project,
    cell: Cell,
    execute: Execute,
    hooks: Hooks,
    resume: str | None,
    cells: list[CellSummary],
    results: dict[str, RunResult],
) -> str | None:
    """Run one cell and add its summary (and run) to ``cells`` (and ``results``); why its
    run was stopped (SIGTERM, Ctrl-C), or None."""
    folder = cell.out_dir.relative_to(project.output).as_posix()
    if hooks.starting is not None:
        hooks.starting(cell)
    try:
        result = execute(cell.event, cell.suite_path, cell.out_dir, resume)
    except ExecutionFailed as exc:
        if hooks.failed is not None:
            hooks.failed(cell, exc)
        from evalrunner.engine.run_types import RunResult  # loaded: the engine raised exc

        partial = exc.result if isinstance(exc, PartialRun) else None
        if isinstance(partial, RunResult):
            results[cell.label] = partial
            cells.append(CellSummary.of_run(cell.target, cell.suite, folder, partial.summary))
        else:
            cells.append(CellSummary.failed(cell.target, cell.suite, folder, exc.message))
        if not isinstance(exc, RunStopped):
            return None
        reason = partial.summary.stopped_reason if isinstance(partial, RunResult) else None
        return reason or "stopped"
    results[cell.label] = result
    cells.append(CellSummary.of_run(cell.target, cell.suite, folder, result.summary))
    if hooks.finished is not None:
        hooks.finished(cell, result)
    return None
