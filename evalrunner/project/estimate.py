"""The estimate of a project file's matrix before it runs (``evalrunner estimate`` with no
``--suite`` file): each (target × suite) cell's event estimated exactly as a run of that one
event would be (:func:`estimate_event`, the code ``evalrunner estimate --suite FILE`` runs),
and the total. Nothing is called: no target, no judge."""

from __future__ import annotations

import tempfile
from collections.abc import Mapping
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from evalrunner.estimate.model import RunEstimate
from evalrunner.project.cells import Overrides, fetch_s3_suites, load_project


class CellEstimate(BaseModel):
    """One cell's estimate: what a run of its event on its suite would cost."""

    model_config = ConfigDict(extra="forbid")

    target: str
    suite: str
    estimate: RunEstimate


class EstimateTotal(BaseModel):
    """The cells added up. ``judge_cost`` adds the judge costs that have a price; the cells
    whose judge model has none are listed in ``unpriced``, so a total is never silently
    short."""

    model_config = ConfigDict(extra="forbid")

    cells: int
    items: int
    judge_calls: int
    judge_input_tokens: int
    judge_output_tokens: int
    judge_cost: float
    gpu_minutes: float
    aws_cost: float
    #: judge cost + AWS cost
    cost: float
    currency: str
    #: "target × suite" of the cells whose judge model has no price listed
    unpriced: list[str]


class ProjectEstimate(BaseModel):
    """The estimate of every chosen cell of a project file, and their total."""

    model_config = ConfigDict(extra="forbid")

    project: str
    cells: list[CellEstimate]
    total: EstimateTotal


def estimate_event(event: Mapping[str, object], suite: Path) -> RunEstimate:
    """The estimate of ``event`` over the suite file, the event validated and settled
    against the suite's cases as a run's Prepare step does."""
    from evalrunner.estimate.compute import estimate_run
    from evalrunner.event import parse_event
    from evalrunner.pipeline.prepare import expand, settle
    from evalrunner.suite.readers import read_suite_file

    cases = read_suite_file(suite)
    settled = settle(parse_event(dict(event)), cases)
    return estimate_run(settled, cases, expand(cases, settled.iterations, settled.perturbations))


def estimate_project(path: Path, overrides: Overrides | None = None) -> ProjectEstimate:
    """Estimate every cell of the project file at ``path`` that ``overrides`` picks (its
    flags applied as ``evalrunner run`` applies them). Bad input raises the same
    :class:`~evalrunner.errors.EvalRunnerError` as ``run`` would, naming file, line and
    key; s3:// suites are downloaded (to a scratch folder) to be read."""
    with tempfile.TemporaryDirectory(prefix="evalrunner-estimate-") as scratch:
        project = load_project(path, overrides)
        fetch_s3_suites(project, Path(scratch))
        cells = [
            CellEstimate(
                target=cell.target,
                suite=cell.suite,
                estimate=estimate_event(cell.event, cell.suite_path),
            )
            for cell in project.cells
        ]
    return ProjectEstimate(project=str(project.path), cells=cells, total=total_of(cells))


def total_of(cells: list[CellEstimate]) -> EstimateTotal:
    """The cells' figures added up (``cells`` is never empty: a project has a target and a
    suite, and picking names none that is not in it)."""
    runs = [c.estimate for c in cells]
    judged = [(c, c.estimate.judge) for c in cells if c.estimate.judge is not None]
    judge_cost = sum(j.cost or 0.0 for _, j in judged)
    aws_cost = sum(r.aws.total for r in runs)
    return EstimateTotal(
        cells=len(cells),
        items=sum(r.items for r in runs),
        judge_calls=sum(j.calls for _, j in judged),
        judge_input_tokens=sum(j.input_tokens for _, j in judged),
        judge_output_tokens=sum(j.output_tokens for _, j in judged),
        judge_cost=judge_cost,
        gpu_minutes=sum(r.gpu_minutes for r in runs),
        aws_cost=aws_cost,
        cost=judge_cost + aws_cost,
        currency=runs[0].currency,
        unpriced=[f"{c.target} × {c.suite}" for c, j in judged if j.cost is None and j.calls],
    )


__all__ = ["CellEstimate", "EstimateTotal", "ProjectEstimate", "estimate_event", "estimate_project"]
