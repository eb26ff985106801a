"""``evalrunner.run_workflow()``: the workflow from Python, as ``evalrunner workflow`` runs it."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from evalrunner.workflow.config import Step, WorkflowConfig, parse_config, parse_steps
from evalrunner.workflow.manifest import StepRecord
from evalrunner.workflow.runner import WorkflowResult, execute

DEFAULT_OUT = Path("evalrunner-workflow")


def workflow_config(
    target: Any, settings: Mapping[str, Any] | None = None, **options: Any
) -> tuple[WorkflowConfig, Any]:
    """The configuration from a workflow file's ``settings`` with ``options`` over it (those
    given, not None), and the target as the runs take it (a function stays a function; the
    configuration names it)."""
    from evalrunner.api.inputs import target_spec

    raw: dict[str, Any] = dict(settings or {})
    raw.update({k: v for k, v in options.items() if v is not None})
    runnable = target if target is not None else raw.get("target")
    if runnable is not None:
        spec, _ = target_spec(runnable)
        raw["target"] = spec
    return parse_config(raw), runnable


def run_workflow(
    target: Any = None,
    *,
    judge: Mapping[str, Any] | None = None,
    documents: str | Path | None = None,
    suite: str | Path | None = None,
    out: str | Path = DEFAULT_OUT,
    steps: Sequence[str] | str | None = None,
    config: Mapping[str, Any] | None = None,
    on_step: Callable[[StepRecord], None] | None = None,
    **settings: Any,
) -> WorkflowResult:
    """Run generate → evaluate → robustness → red team → calibrate → weak spots → artifacts
    against ``target`` (the event's target object or a Python function), in ``out``.

    ``documents``: the folder the suite is generated from (else ``suite``: a suite file).
    ``steps``: the steps to run (default all). ``config``: a workflow file's object; the
    other keyword arguments are its fields (``metrics``, ``perturbations``, ``redteam``,
    ``labels``, ``counts``, ``iterations``, ``fail_on``, ``guardrail_name``, ``preflight``)
    and win over it. A step already finished in ``out`` with the same inputs is not run
    again. Bad settings raise :class:`~evalrunner.errors.ConfigError` naming the field."""
    cfg, runnable = workflow_config(
        target,
        config,
        judge=dict(judge) if judge else None,
        documents=str(documents) if documents is not None else None,
        suite=str(suite) if suite is not None else None,
        **settings,
    )
    chosen: list[Step] = parse_steps(
        list(steps) if isinstance(steps, Sequence) and not isinstance(steps, str) else steps
    )
    return execute(cfg, Path(out), target=runnable, steps=chosen, on_step=on_step)
