"""``evalrunner.assert_case``: one answer checked against metric thresholds, in a test.

The case runs through :func:`evalrunner.evaluate` as a one-row suite whose answer and contexts
are given (``actual_answer`` / ``retrieved_contexts``: the target is not called), so a metric
scores here exactly as in a suite run, judge metrics included. An assertion that cannot be
checked fails: a metric skipped for want of input (no contexts for Faithfulness, no judge
configured) is not a pass.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalrunner.api.result import EvalRun
from evalrunner.api.runs import evaluate
from evalrunner.errors import ConfigError

#: The judge assert_case uses when none is passed: JSON or a file, like ``--judge``. The
#: pytest plugin's ``--evalrunner-judge`` sets it for the session.
JUDGE_ENV = "EVALRUNNER_JUDGE"


@dataclass(frozen=True)
class Check:
    """One metric of an assertion: what was asked and what came out."""

    metric: str
    threshold: float
    score: float | None
    passed: bool
    reason: str

    def line(self) -> str:
        score = "no score" if self.score is None else f"{self.score:.4f}"
        verdict = "ok" if self.passed else "FAILED"
        return f"{self.metric}: {score} (threshold {self.threshold}) {verdict}: {self.reason}"


def assert_case(
    question: str,
    answer: str,
    contexts: Sequence[str] | None = None,
    *,
    metrics: Mapping[str, float],
    expected_answer: str | None = None,
    judge: Mapping[str, Any] | str | None = None,
    out: str | Path | None = None,
    **columns: Any,
) -> EvalRun:
    """Score ``answer`` (with its retrieved ``contexts``) on ``metrics`` — metric or evaluator
    name → threshold — and raise :class:`AssertionError` listing every metric that is below
    its threshold, errored or could not be scored. Returns the run when all pass.

    ``expected_answer`` and ``columns`` (``expected_contexts``, ``condition``, ... as in a
    suite) are the case's other cells. ``judge`` defaults to ``$EVALRUNNER_JUDGE`` (set by
    the pytest plugin's ``--evalrunner-judge``). ``out``: keep the reports there (default:
    a temporary folder, removed)."""
    if not metrics:
        raise ConfigError("assert_case: metrics is empty; name at least one, e.g. {'ROUGE-L': 0.5}")
    selected = {name: _owner(name) for name in metrics}
    row: dict[str, Any] = {
        "question": question,
        "actual_answer": answer,
        "retrieved_contexts": json.dumps(list(contexts or []), ensure_ascii=False),
        **columns,
    }
    if expected_answer is not None:
        row["expected_answer"] = expected_answer
    options: dict[str, Any] = {
        "metrics": list(dict.fromkeys(evaluator for evaluator, _ in selected.values())),
        "thresholds": dict(metrics),
        "judge": judge if judge is not None else os.environ.get(JUDGE_ENV) or None,
        "suite_name": "assert-case",
    }
    if out is not None:
        run = evaluate([row], _answers_given, out=out, **options)
    else:
        with tempfile.TemporaryDirectory(prefix="evalrunner-assert-") as folder:
            run = evaluate([row], _answers_given, out=folder, **options)
            _ = run.report  # read while the files are there
    checks = case_checks(run, {name: metric for name, (_, metric) in selected.items()}, metrics)
    failed = [c for c in checks if not c.passed]
    if failed:
        lines = "\n".join(f"  - {c.line()}" for c in failed)
        raise AssertionError(f"{len(failed)} of {len(checks)} metrics failed:\n{lines}")
    return run


def case_checks(
    run: EvalRun, metric_of: Mapping[str, str], thresholds: Mapping[str, float]
) -> list[Check]:
    """The checks of the run's first case: one per asked name."""
    row = run.report.rows[0]
    if row.status != "ok":
        return [
            Check(name, thresholds[name], None, False, row.error or row.status)
            for name in metric_of
        ]
    checks = []
    for name, metric in metric_of.items():
        result = row.result(metric)
        if result is None:
            checks.append(Check(metric, thresholds[name], None, False, "not evaluated"))
        elif result.status != "scored":
            checks.append(
                Check(metric, thresholds[name], None, False, f"{result.status}: {result.reason}")
            )
        else:
            checks.append(
                Check(metric, thresholds[name], result.score, bool(result.success), result.reason)
            )
    return checks


def _owner(name: str) -> tuple[str, str]:
    """(evaluator to select, metric to check) for a name the user wrote: an evaluator (its
    primary metric is checked) or one of an evaluator's metrics."""
    from evalrunner.evaluators import registry

    try:
        cls = registry.resolve(name)
    except ConfigError:
        owners = registry.metric_names(registry.available().values())
        if name in owners:
            return owners[name], name
        raise
    return cls.name, cls.primary_metric().name


def _answers_given(question: str) -> str:
    # Never called: every row carries its answer. Named for what a report would show.
    raise ConfigError("assert_case rows carry their answer; the target is not called")


_answers_given.__name__ = "assert-case"

__all__ = ["JUDGE_ENV", "Check", "assert_case", "case_checks"]
