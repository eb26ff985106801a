"""``evalrunner.run_project``: the project file's matrix from Python, as ``evalrunner run``
runs it (the same :mod:`evalrunner.project.run`), keyword arguments in place of flags."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalrunner.api.result import EvalRun
from evalrunner.fail_on import FailOn
from evalrunner.project.matrix import MatrixSummary


@dataclass
class ProjectResult:
    """A finished project run: the matrix summary and each cell's run, by ``"target ×
    suite"``; ``exit_code`` is the worst cell's, as the CLI's."""

    matrix: MatrixSummary
    runs: dict[str, EvalRun]
    files: list[Path]

    @property
    def exit_code(self) -> int:
        return self.matrix.exit_code

    @property
    def passed(self) -> bool:
        """Every cell passed (exit code 0)."""
        return self.matrix.exit_code == 0


def run_project(
    path: str | Path | None = None,
    *,
    targets: Sequence[str] | None = None,
    suite: str | Sequence[str] | None = None,
    out: str | Path | None = None,
    iterations: int | None = None,
    metrics: Sequence[str] | None = None,
    profile: str | None = None,
    plugins: Sequence[str] | None = None,
    judge: Mapping[str, Any] | None = None,
    thresholds: Mapping[str, float] | None = None,
    fail_under: Mapping[str, float] | None = None,
    fail_on: FailOn | str | None = None,
    fail_on_regression: bool | None = None,
    max_error_share: float | None = None,
    baseline: str | None = None,
    max_concurrency: int | None = None,
    preflight: bool = True,
    function_timeout: float | None = None,
    resume: str | None = None,
) -> ProjectResult:
    """Run the project file at ``path`` (default: evalrunner.toml / .yaml found from the
    current folder up to the repository root) and return its matrix. ``targets`` / ``suite``
    pick cells by name (``suite``: one name or several); ``out`` replaces the file's
    ``output``; every other keyword replaces the file's value as its flag does
    (``thresholds`` and ``fail_under`` are merged name by name, README "Project file");
    ``resume`` continues a stopped run of the one cell that ``targets`` and ``suite`` pick.
    Bad input raises an :class:`~evalrunner.errors.EvalRunnerError` naming file, line and
    key, and a failed pre-flight :class:`~evalrunner.preflight.PreflightFailed`, before any
    cell runs."""
    from evalrunner.launch import run_local
    from evalrunner.project.cells import Overrides
    from evalrunner.project.run import run_cells
    from evalrunner.project.source import PROJECT_FILES, ProjectError, find_project

    found = Path(path) if path is not None else find_project(Path.cwd())
    if found is None or not found.is_file():
        raise ProjectError(
            f"{found or 'run_project'}: no project file; give its path, or write one of "
            f"{', '.join(PROJECT_FILES)} in this folder or the repository root"
        )
    given = {
        "iterations": iterations,
        "metrics": list(metrics) if metrics is not None else None,
        "profile": profile,
        "plugins": list(plugins) if plugins is not None else None,
        "judge": dict(judge) if judge is not None else None,
        "thresholds": dict(thresholds) if thresholds is not None else None,
        "fail_under": dict(fail_under) if fail_under is not None else None,
        "fail_on": FailOn(fail_on).value if fail_on is not None else None,
        "fail_on_regression": fail_on_regression,
        "max_error_share": max_error_share,
        "baseline": baseline,
        "max_concurrency": max_concurrency,
    }
    overrides = Overrides(
        event={k: v for k, v in given.items() if v is not None},
        targets=list(targets or []),
        suites=[suite] if isinstance(suite, str) else list(suite or []),
        output=Path(out) if out is not None else None,
        resume=resume,
    )
    done = run_cells(
        found,
        overrides,
        lambda event, suite_path, out_dir, resume: run_local(
            event,
            suite_path,
            out_dir,
            preflight=False,
            function_timeout=function_timeout,
            resume=resume,
        ),
        preflight=preflight,
    )
    runs = {label: EvalRun(result) for label, result in done.results.items()}
    return ProjectResult(matrix=done.matrix, runs=runs, files=done.files)
