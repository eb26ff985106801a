"""``evalrunner run`` of a project file: the matrix of its targets × suites in one command.

Each cell is an ordinary local run (its event built and checked by
:mod:`evalrunner.project.cells`), writing its normal report set in
``<output>/<target>/<suite>/``; then one matrix summary (``matrix.html``, ``matrix.json``)
and one exit code, the worst cell's. Every cell is checked, and every target pre-flighted,
before the first cell runs, so bad input or a dead target stops the matrix before anything
is spent."""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer
from rich.markup import escape

from evalrunner.cli.common import EXIT_INPUT, EXIT_PREFLIGHT, _fail, check_out_dir, err, out
from evalrunner.errors import EvalRunnerError, ExecutionFailed, PartialRun, RunStopped
from evalrunner.jsonout import dump_json

#: How the command runs one event locally: (event, suite, out_dir, quiet, stall_timeout=,
#: preflight=, function_timeout=) -> RunResult.
Execute = Callable[..., "RunResult"]

if TYPE_CHECKING:  # pydantic and the engine: imported by the commands that run, not --help
    from evalrunner.engine.run_types import RunResult
    from evalrunner.project.cells import Overrides, Project
    from evalrunner.project.matrix import CellSummary, MatrixSummary


def given_options(**options: Any) -> dict[str, Any]:
    """The event fields the command line gave (a flag left out is absent): one suite's
    event is made of them, and in a project they override the file's values."""
    return {name: value for name, value in options.items() if value is not None}


def project_file(config: Path | None, suite: Path | None, resume: str | None) -> Path | None:
    """The project file ``run`` runs, or None for a run of one suite file: ``--config``, else
    evalrunner.toml / .yaml found from this folder up, unless ``--suite`` names a file."""
    from evalrunner.project.source import PROJECT_FILES, ProjectError, find_project

    if config is None and suite is not None and suite.is_file():
        return None
    if config is not None and not config.is_file():
        raise ProjectError(f"--config: {config} does not exist or is not a file")
    found = config or find_project(Path.cwd())
    if found is None:
        if suite is not None:
            raise ProjectError(f"--suite: {suite} does not exist or is not a file")
        raise ProjectError(
            "nothing to run: give --suite FILE (and --target), or write a project file ("
            f"{', '.join(PROJECT_FILES)}) in this folder or the repository root, or name one "
            "with --config; README 'Project file'"
        )
    if resume:
        raise ProjectError(
            "--resume continues one run of one suite: give it with --suite FILE and --target, "
            "not with a project file"
        )
    return found


def run_project(
    path: Path,
    overrides: Overrides,
    *,
    as_json: bool,
    quiet: bool,
    stall_timeout: float | None,
    function_timeout: float | None,
    junit_xml: Path | None,
    markdown: Path | None,
    no_preflight: bool,
    execute: Execute,
) -> None:
    """Run every chosen cell of the project file at ``path``; exits with the worst cell's
    code (bad input 2 and a failed pre-flight 5 before any cell runs). ``execute``: how the
    command runs one event (``running._execute_local``: its progress bar and collector
    settings), handed in so this module does not import the command's."""
    from evalrunner.cli.ci_reports import check_ci_paths
    from evalrunner.launch import check_suite, preflight_local
    from evalrunner.preflight import PreflightFailed
    from evalrunner.project.cells import fetch_s3_suites, load_project
    from evalrunner.project.matrix import MatrixSummary, write_matrix

    with tempfile.TemporaryDirectory(prefix="evalrunner-project-") as scratch:
        try:
            project = load_project(path, overrides)
            check_out_dir(project.output)
            check_ci_paths(junit_xml, markdown)
            fetch_s3_suites(project, Path(scratch))
            for cell in project.cells:  # every cell, before the first run starts
                check_suite(cell.suite_path, cell.event)
            if not quiet and not as_json:
                _warn(project)
            from evalrunner.engine.moto_compat import speed_seams_from_env

            speed_seams_from_env()
            if not no_preflight:  # each target answers once before the first cell runs
                probed: set[str] = set()
                for cell in project.cells:
                    if cell.target not in probed:
                        probed.add(cell.target)
                        preflight_local(cell.event, cell.suite_path)
        except PreflightFailed as exc:
            raise _fail(exc, EXIT_PREFLIGHT) from None
        except EvalRunnerError as exc:
            raise _fail(exc, EXIT_INPUT) from None
        cells, results, not_run = _run_cells(
            project,
            execute,
            as_json=as_json,
            quiet=quiet,
            stall_timeout=stall_timeout,
            function_timeout=function_timeout,
        )
    matrix = MatrixSummary.of_cells(project.path, cells, not_run)
    files = write_matrix(matrix, project.output)
    from evalrunner.cli.ci_reports import write_ci_reports

    for ci_path in write_ci_reports(results, junit=junit_xml, markdown=markdown):
        if not as_json:
            out.print(f"CI report: {ci_path}", highlight=False, markup=False)
    if as_json:
        out.print_json(dump_json(matrix.model_dump(mode="json")))
    else:
        _print_matrix(matrix, files)
    raise typer.Exit(matrix.exit_code)


def _warn(project: Project) -> None:
    """What the run would skip or leave out, said once for the matrix (the cells share
    their metrics and judge), as ``run`` says it for one suite."""
    from evalrunner.cli.inputs import warn_about_defaults
    from evalrunner.event import concurrency_cap, parse_event

    warn_about_defaults(parse_event(project.cells[0].event, concurrency_cap=concurrency_cap()))


def _run_cells(
    project: Project,
    execute: Execute,
    *,
    as_json: bool,
    quiet: bool,
    stall_timeout: float | None,
    function_timeout: float | None,
) -> tuple[list[CellSummary], list[RunResult], list[str]]:
    """Each cell in turn. A cell whose run fails is recorded (exit 3) and the matrix goes
    on; a stopped run (SIGTERM, Ctrl-C) stops the matrix, its other cells listed as not run."""
    from evalrunner.cli.run_console import report
    from evalrunner.engine.saved_runs import stopped_run_notices
    from evalrunner.project.matrix import CellSummary

    cells: list[CellSummary] = []
    results: list[RunResult] = []
    for index, cell in enumerate(project.cells):
        folder = cell.out_dir.relative_to(project.output).as_posix()
        if not as_json:
            out.rule(f"{cell.label}", style="bold")
        _notes(stopped_run_notices(cell.out_dir, resuming=None))
        try:
            result = execute(
                cell.event,
                cell.suite_path,
                cell.out_dir,
                quiet or as_json,
                stall_timeout=stall_timeout,
                preflight=False,
                function_timeout=function_timeout,
            )
        except ExecutionFailed as exc:
            err.print(f"[bold red]error:[/] {escape(exc.message)}", highlight=False)
            from evalrunner.engine.run_types import RunResult  # loaded: the engine raised exc

            partial = exc.result if isinstance(exc, PartialRun) else None
            if isinstance(partial, RunResult):
                results.append(partial)
                cells.append(CellSummary.of_run(cell.target, cell.suite, folder, partial.summary))
            else:
                cells.append(CellSummary.failed(cell.target, cell.suite, folder, exc.message))
            if isinstance(exc, RunStopped):
                return cells, results, [c.label for c in project.cells[index + 1 :]]
            continue
        results.append(result)
        cells.append(CellSummary.of_run(cell.target, cell.suite, folder, result.summary))
        if not as_json:
            report(result, as_json=False)
            _notes(result.notices)
    return cells, results, []


def _notes(notices: list[str]) -> None:
    for notice in notices:
        err.print(f"[yellow]note:[/] {escape(notice)}", highlight=False, soft_wrap=True)


def _print_matrix(matrix: MatrixSummary, files: list[Path]) -> None:
    from rich.table import Table

    table = Table(title="matrix", title_justify="left")
    for col in ("Target", "Suite", "Verdict", "Exit", "Primary metrics (pass rate)"):
        table.add_column(col)
    for cell in matrix.cells:
        rates = ", ".join(
            f"{m.metric} {'—' if m.pass_rate is None else f'{m.pass_rate:.0%}'}"
            for m in cell.metrics
        )
        table.add_row(cell.target, cell.suite, cell.headline, str(cell.exit_code), rates)
    out.print(table)
    for label in matrix.not_run:
        out.print(f"not run: {label}", markup=False, highlight=False)
    for path in files:
        out.print(f"matrix: {path}", markup=False, highlight=False)
    out.print(
        f"[bold]matrix exit code {matrix.exit_code}[/] (the worst of {len(matrix.cells)} cells)"
    )
