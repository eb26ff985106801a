"""``evalrunner run`` of a project file: the matrix of its targets × suites in one command,
run by :mod:`evalrunner.project.run` (as ``evalrunner.run_project`` runs it) and printed
here: each cell's report as it finishes, then the matrix and one exit code, the worst
cell's. Also which file ``run`` runs, and the flags it was given as event fields."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer
from rich.markup import escape

from evalrunner.cli.common import EXIT_INPUT, EXIT_PREFLIGHT, _fail, err, out
from evalrunner.errors import EvalRunnerError, ExecutionFailed, PartialRun
from evalrunner.jsonout import dump_json

#: How the command runs one event locally: (event, suite, out_dir, quiet, stall_timeout=,
#: preflight=, function_timeout=) -> RunResult.
Execute = Callable[..., "RunResult"]

if TYPE_CHECKING:  # pydantic and the engine: imported by the commands that run, not --help
    from evalrunner.engine.run_types import RunResult
    from evalrunner.project.cells import Cell, Overrides, Project
    from evalrunner.project.matrix import MatrixSummary


def given_options(**options: Any) -> dict[str, Any]:
    """The event fields the command line gave (a flag left out is absent): one suite's
    event is made of them, and in a project they override the file's values."""
    return {name: value for name, value in options.items() if value is not None}


def project_file(config: Path | None, suites: list[Path]) -> Path | None:
    """The project file ``run`` / ``estimate`` reads, or None for one suite file (then
    ``suites`` holds exactly it): ``--config``, else evalrunner.toml / .yaml found from this
    folder up. Without ``--config``, a ``--suite`` value naming an existing file is that
    suite file (no project file is read); any other value is the name of a project suite."""
    from evalrunner.project.source import PROJECT_FILES, ProjectError, find_project

    files = [s for s in suites if s.is_file()]
    if config is None and files:
        if len(suites) > 1:
            raise ProjectError(
                f"--suite {files[0]}: a suite file is run on its own; give one --suite FILE, "
                "or (repeatable) the names of a project file's suites"
            )
        return None
    if config is not None and not config.is_file():
        raise ProjectError(f"--config: {config} does not exist or is not a file")
    found = config or find_project(Path.cwd())
    if found is None:
        if suites:
            raise ProjectError(f"--suite: {suites[0]} does not exist or is not a file")
        raise ProjectError(
            "nothing to run: give --suite FILE (and --target), or write a project file ("
            f"{', '.join(PROJECT_FILES)}) in this folder or the repository root, or name one "
            "with --config; README 'Project file'"
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
    """Run every chosen cell of the project file at ``path`` (:mod:`evalrunner.project.run`)
    and print it; exits with the worst cell's code (bad input 2 and a failed pre-flight 5
    before any cell runs). ``execute``: how the command runs one event
    (``running._execute_local``: its progress bar and collector settings), handed in so this
    module does not import the command's."""
    from evalrunner.cli.ci_reports import check_ci_paths, write_ci_reports
    from evalrunner.cli.run_console import report
    from evalrunner.engine.moto_compat import speed_seams_from_env
    from evalrunner.engine.saved_runs import stopped_run_notices
    from evalrunner.preflight import PreflightFailed
    from evalrunner.project.run import Hooks, run_cells

    def one(event: dict[str, Any], suite: Path, out_dir: Path, resume: str | None) -> RunResult:
        return execute(
            event,
            suite,
            out_dir,
            quiet or as_json,
            stall_timeout=stall_timeout,
            resume=resume,
            preflight=False,
            function_timeout=function_timeout,
        )

    def checked(project: Project) -> None:
        speed_seams_from_env()  # a bad EVALRUNNER_ENGINE_FAST is bad input: before any probe
        if not quiet and not as_json:
            _warn(project)

    def starting(cell: Cell) -> None:
        if not as_json:
            out.rule(cell.label, style="bold")
        _notes(stopped_run_notices(cell.out_dir, resuming=overrides.resume))

    def finished(cell: Cell, result: RunResult) -> None:
        if not as_json:
            report(result, as_json=False)
            _notes(result.notices)

    def failed(cell: Cell, exc: ExecutionFailed) -> None:
        err.print(f"[bold red]error:[/] {escape(exc.message)}", highlight=False)
        if isinstance(exc, PartialRun) and exc.run_id:  # the cell's own command, not the matrix's
            _notes(
                [
                    f"to run the rest of {cell.label}: evalrunner run --target {cell.target} "
                    f"--suite {cell.suite} --resume {exc.run_id}"
                ]
            )

    try:
        done = run_cells(
            path,
            overrides,
            one,
            preflight=not no_preflight,
            hooks=Hooks(checked=checked, starting=starting, finished=finished, failed=failed),
            before_run=lambda _: check_ci_paths(junit_xml, markdown),
        )
    except PreflightFailed as exc:
        raise _fail(exc, EXIT_PREFLIGHT) from None
    except EvalRunnerError as exc:
        raise _fail(exc, EXIT_INPUT) from None
    runs = list(done.results.values())
    for ci_path in write_ci_reports(runs, junit=junit_xml, markdown=markdown):
        if not as_json:
            out.print(f"CI report: {ci_path}", highlight=False, markup=False)
    if as_json:
        out.print_json(dump_json(done.matrix.model_dump(mode="json")))
    else:
        _print_matrix(done.matrix, done.files)
    raise typer.Exit(done.matrix.exit_code)


def _warn(project: Project) -> None:
    """What the run would skip or leave out, said once for the matrix (the cells share
    their metrics and judge), as ``run`` says it for one suite."""
    from evalrunner.cli.inputs import warn_about_defaults
    from evalrunner.event import concurrency_cap, parse_event

    warn_about_defaults(parse_event(project.cells[0].event, concurrency_cap=concurrency_cap()))


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
    if matrix.stopped_reason:
        out.print(f"stopped: {matrix.stopped_reason}", markup=False, highlight=False)
    for label in matrix.not_run:
        out.print(f"not run: {label}", markup=False, highlight=False)
    for path in files:
        out.print(f"matrix: {path}", markup=False, highlight=False)
    out.print(
        f"[bold]matrix exit code {matrix.exit_code}[/] (the worst of {len(matrix.cells)} cells)"
    )
