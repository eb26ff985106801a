"""``evalrunner.rescore()``: a finished run's stored answers scored again, as
``evalrunner rescore`` does, without calling its target (see :mod:`evalrunner.stored_answers`).

The event is built as :func:`evalrunner.evaluate` builds one, with the logged target, the
original run as the baseline and ``rescored_from`` naming it, and runs in the same embedded
engine, so the numbers are those of any other run of these answers."""

from __future__ import annotations

import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from evalrunner.api.inputs import suite_file
from evalrunner.api.result import EvalRun
from evalrunner.api.runs import DEFAULT_OUT, _fail_on, _judge
from evalrunner.evaluators.plugins import MetricChoice, selection
from evalrunner.launch import local_event, run_local
from evalrunner.reports.verdict import FailOn
from evalrunner.stored_answers import stored_run


def rescore(
    run: str | Path,
    *,
    metrics: Sequence[MetricChoice] | None = None,
    profile: str | None = None,
    plugins: Sequence[str] | None = None,
    judge: Mapping[str, Any] | str | None = None,
    out: str | Path | None = None,
    thresholds: Mapping[str, float] | None = None,
    fail_under: Mapping[str, float] | None = None,
    fail_on: FailOn | str | None = None,
    evaluator_options: Mapping[str, Any] | None = None,
) -> EvalRun:
    """Score ``run`` (a run id under ``out``, its report file, or its report folder, whose
    newest run is taken) again with these metrics, thresholds or judge. Its stored answers are
    scored by the logged target, so the target is not called; the new report set goes under
    the same target in ``out`` (default: the reports folder holding the run), compared with
    the original run (its baseline) and linked to it (``summary.rescored_from``). A run that
    cannot be rescored (not found, no stored answers, iterations, conversations) raises
    :class:`evalrunner.errors.ConfigError`."""
    stored = stored_run(run, Path(out or DEFAULT_OUT))
    out_dir = Path(out) if out else stored.home  # beside the original: its baseline is there
    chosen = selection(list(metrics or []))
    with tempfile.TemporaryDirectory(prefix="evalrunner-rescore-") as folder:
        path = suite_file(stored.rows, Path(folder), f"rescore-{stored.run_id}")
        event = local_event(
            path.name,
            {"logged": stored.target},
            iterations=1,
            metrics=chosen.metrics or None,
            profile=profile,
            plugins=list(dict.fromkeys([*(plugins or []), *chosen.plugins])) or None,
            fail_under=dict(fail_under) if fail_under else None,
            thresholds={**chosen.thresholds, **(thresholds or {})} or None,
            baseline=stored.run_id,
            rescored_from=stored.run_id,
            judge=_judge(judge),
            evaluator_options={**chosen.options, **(evaluator_options or {})} or None,
            fail_on=_fail_on(fail_on),
        )
        result = run_local(event, path, out_dir, preflight=False)
    return EvalRun(result)
