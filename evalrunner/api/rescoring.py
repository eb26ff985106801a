"""``evalrunner.rescore()``: a finished run's stored answers scored again, as
``evalrunner rescore`` does, without calling its target (see :mod:`evalrunner.stored_answers`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from evalrunner.api.result import EvalRun
from evalrunner.api.runs import DEFAULT_OUT, evaluate
from evalrunner.evaluators.plugins import MetricChoice
from evalrunner.reports.verdict import FailOn
from evalrunner.stored_answers import stored_run


def rescore(
    run: str | Path,
    *,
    metrics: Sequence[MetricChoice] | None = None,
    profile: str | None = None,
    plugins: Sequence[str] | None = None,
    judge: Mapping[str, Any] | str | None = None,
    out: str | Path = DEFAULT_OUT,
    thresholds: Mapping[str, float] | None = None,
    fail_under: Mapping[str, float] | None = None,
    fail_on: FailOn | str | None = None,
    evaluator_options: Mapping[str, Any] | None = None,
) -> EvalRun:
    """Score ``run`` (a run id under ``out``, its report file, or its report folder) again
    with these metrics, thresholds or judge: its stored answers are scored by the logged
    target, so the target is not called, and the new report set goes under the same target
    in ``out``, with the original run as its baseline (``summary.baseline_run_id``)."""
    stored = stored_run(run, Path(out))
    return evaluate(
        stored.rows,
        {"logged": stored.target},
        metrics=metrics,
        profile=profile,
        plugins=plugins,
        judge=judge,
        out=out,
        thresholds=thresholds,
        fail_under=fail_under,
        fail_on=fail_on,
        evaluator_options=evaluator_options,
        baseline=stored.run_id,
        suite_name=f"rescore-{stored.run_id}",
        preflight=False,
    )
