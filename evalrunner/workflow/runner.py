"""Runs the workflow's steps in order, each once: a step whose manifest record says done
with the same inputs digest (its settings and the outputs of the steps it reads) is not run
again, so rerunning a stopped workflow resumes at its first unfinished step, and changing a
setting reruns the steps it reaches and those after them that read their outputs."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalrunner.errors import ConfigError, EvalRunnerError, PartialRun, RunStopped
from evalrunner.workflow import manifest as mf
from evalrunner.workflow.config import NEEDS, STEPS, Step, WorkflowConfig
from evalrunner.workflow.manifest import Manifest, StepRecord, verdict
from evalrunner.workflow.steps import Context, StepFn

_log = logging.getLogger(__name__)


def _steps() -> dict[Step, StepFn]:
    from evalrunner.workflow import artifacts, steps

    return {
        Step.GENERATE: steps.generate,
        Step.EVALUATE: steps.evaluate,
        Step.ROBUSTNESS: steps.robustness,
        Step.REDTEAM: steps.redteam,
        Step.CALIBRATE: steps.calibrate,
        Step.WEAK_SPOTS: steps.weak_spots,
        Step.ARTIFACTS: artifacts.write_artifacts,
    }


def step_function(step: Step) -> StepFn:
    """The function that runs ``step`` (for the deployed workflow's tasks)."""
    return _steps()[step]


@dataclass
class WorkflowResult:
    """A workflow's manifest, report and verdict after a call of :func:`execute`."""

    folder: Path
    manifest: Manifest
    #: Steps run by this call, and steps found finished and not repeated.
    ran: list[Step]
    reused: list[Step]
    report_html: Path
    report_json: Path

    @property
    def verdict(self) -> str:
        return verdict(self.manifest)

    @property
    def passed(self) -> bool:
        return self.verdict == "passed"

    def step(self, step: Step | str) -> StepRecord:
        return self.manifest.record(Step(step))

    def path(self, step: Step | str, name: str) -> Path:
        """A step's output file by name (e.g. ``("artifacts", "guardrail")``)."""
        rel = self.step(step).outputs.get(name)
        if rel is None:
            have = ", ".join(self.step(step).outputs) or "none"
            raise KeyError(f"step {Step(step).value} wrote no {name!r}; it wrote: {have}")
        return self.folder / rel


def _suite_digest(ctx: Context) -> str | None:
    record = ctx.manifest.record(Step.GENERATE)
    if record.status == "done":
        return record.output_digests.get("suite")
    if ctx.config.suite and Path(ctx.config.suite).is_file():
        return mf.digest_file(Path(ctx.config.suite))
    return None


def _settings(ctx: Context, step: Step) -> dict[str, Any]:
    """What a step reads from the configuration (and its files, by digest)."""
    c = ctx.config
    run = {
        "target": c.target,
        "judge": c.judge,
        "metrics": c.metrics,
        "thresholds": c.thresholds,
        "iterations": c.iterations,
        "fail_on": c.fail_on,
    }
    if step is Step.GENERATE:
        docs = Path(c.documents) if c.documents else None
        return {
            "documents": c.documents,
            "digest": mf.digest_tree(docs) if docs is not None and docs.exists() else None,
            "counts": c.counts,
            "max_words": c.max_words,
            "judge": c.judge,
        }
    if step is Step.EVALUATE:
        return {**run, "suite": _suite_digest(ctx)}
    if step is Step.ROBUSTNESS:
        return {
            **run,
            "suite": _suite_digest(ctx),
            "perturbations": [p.model_dump() for p in c.perturbations],
        }
    if step is Step.REDTEAM:
        return {
            "target": c.target,
            "judge": c.judge,
            "fail_on": c.fail_on,
            "redteam": c.redteam.model_dump(),
            "suite": None if c.redteam.purpose else _suite_digest(ctx),
        }
    if step is Step.CALIBRATE:
        labels = Path(c.labels) if c.labels else None
        return {"labels": mf.digest_file(labels) if labels and labels.is_file() else c.labels}
    if step is Step.ARTIFACTS:
        return {
            "judge": c.judge,
            "guardrail_name": c.guardrail_name,
            "purpose": c.redteam.purpose,
            "suite": _suite_digest(ctx),
            "redteam": ctx.manifest.record(Step.REDTEAM).output_digests,
        }
    return {}


def _failed(
    folder: Path, manifest: Manifest, step: Step, digest: str, started: str, error: str
) -> None:
    """Record ``step`` as failed with ``error``, so the next call resumes there."""
    manifest.replace(
        StepRecord(
            step=step,
            status="failed",
            error=error,
            inputs_digest=digest,
            started_at=started,
            finished_at=mf.now(),
        )
    )
    mf.save(folder, manifest)


def inputs_digest(ctx: Context, step: Step) -> str:
    upstream = {s.value: ctx.manifest.record(s).output_digests for s in NEEDS[step]}
    return mf.digest_json({"step": step.value, "settings": _settings(ctx, step), "up": upstream})


def due(ctx: Context, step: Step) -> str | None:
    """``step``'s inputs digest when it must run; None when it is finished with the same
    inputs (not run again). Shared by the local runner and the deployed workflow's steps."""
    digest = inputs_digest(ctx, step)
    if mf.finished(ctx.manifest.record(step), digest, ctx.folder):
        _log.info("workflow: %s is finished with the same inputs; not run again", step)
        return None
    return digest


def start(ctx: Context, step: Step, digest: str, **facts: Any) -> str:
    """Record ``step`` as started (pending, with its inputs digest) and save; returns when."""
    started = mf.now()
    ctx.manifest.replace(
        StepRecord(step=step, started_at=started, inputs_digest=digest, facts=facts)
    )
    mf.save(ctx.folder, ctx.manifest)
    return started


def finish(ctx: Context, record: StepRecord, digest: str, started: str) -> StepRecord:
    """Record a step's result with the digests of what it wrote, and save."""
    record.inputs_digest = digest
    record.started_at, record.finished_at = started, mf.now()
    record.output_digests = {k: mf.digest_tree(ctx.folder / v) for k, v in record.outputs.items()}
    ctx.manifest.replace(record)
    mf.save(ctx.folder, ctx.manifest)
    return record


def fail(ctx: Context, step: Step, digest: str, started: str, error: str) -> None:
    """Record ``step`` as failed with ``error``, so the next start resumes there."""
    _failed(ctx.folder, ctx.manifest, step, digest, started, error)


def stale_steps(ctx: Context, chosen: Sequence[Step]) -> list[Step]:
    """Finished steps not run this time whose inputs have changed since (a step before them
    ran again): the report says so, and their next run does not reuse them."""
    return [
        r.step
        for r in ctx.manifest.steps
        if r.step not in chosen
        and r.status == "done"
        and r.inputs_digest != inputs_digest(ctx, r.step)
    ]


def execute(
    config: WorkflowConfig,
    folder: Path,
    *,
    target: Any = None,
    steps: Sequence[Step] | None = None,
    on_step: Callable[[StepRecord], None] | None = None,
) -> WorkflowResult:
    """Run the selected ``steps`` (default: all) of ``config`` in ``folder``, skipping those
    finished with the same inputs, and write the workflow report. ``target``: a Python
    function standing for ``config.target`` (default: ``config.target`` itself).
    ``on_step``: called with each step's record once it is saved. A step that fails is
    recorded as failed with its error and the error is raised: the next call resumes there."""
    from evalrunner.cli.common import check_out_dir
    from evalrunner.workflow.report import write_report

    check_out_dir(folder)
    chosen = list(steps or STEPS)
    manifest = mf.load(folder)
    ctx = Context(
        config=config,
        folder=folder,
        target=config.target if target is None else target,
        manifest=manifest,
        judge=config.judge,
    )
    for step in chosen:
        for need in NEEDS[step]:
            if need not in chosen and manifest.record(need).status != "done":
                raise ConfigError(
                    f"--steps: {step.value} reads what {need.value} writes, and {need.value} "
                    f"has not run in {folder}: add it, e.g. --steps {need.value},{step.value}"
                )
    functions = _steps()
    ran: list[Step] = []
    reused: list[Step] = []
    try:
        for step in chosen:
            digest = due(ctx, step)
            if digest is None:
                reused.append(step)
                continue
            started = start(ctx, step, digest)
            try:
                record = functions[step](ctx)
            except PartialRun as exc:
                # the run's own message ends with `--resume RUN_ID`, a flag the workflow does
                # not have: a workflow reruns the whole step, so the message says that
                how = "was stopped" if isinstance(exc, RunStopped) else "stalled"
                message = (
                    f"workflow: the {step.value} step's run {how} part-way; rerun the same "
                    f"workflow command to run the step again (the partial run stays under "
                    f"{folder / step.value})"
                )
                _failed(folder, manifest, step, digest, started, message)
                raise type(exc)(message, files=exc.files) from exc
            except EvalRunnerError as exc:
                _failed(folder, manifest, step, digest, started, str(exc))
                raise
            except KeyboardInterrupt:
                # Ctrl-C outside a pipeline run (the judge writing the suite, the attacks or
                # the artifacts): the same as a stopped run, so the step is recorded as
                # stopped and the caller is told to rerun, not left with a bare interrupt
                message = (
                    f"workflow: the {step.value} step was stopped (Ctrl-C); rerun the same "
                    "command to resume at it"
                )
                _failed(folder, manifest, step, digest, started, message)
                raise RunStopped(message) from None
            record = finish(ctx, record, digest, started)
            ran.append(step)
            if on_step is not None:
                on_step(record)
    finally:
        stale = stale_steps(ctx, chosen)
        html, js = write_report(folder, manifest, config.suite_source(), stale)
    return WorkflowResult(folder, manifest, ran, reused, html, js)
