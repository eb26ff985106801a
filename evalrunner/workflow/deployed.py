"""The deployed workflow: what the workflow state machine's Lambda tasks
(``state_machines/workflow.asl.json``, ``lambdas/workflow.py``) do, over the runner bucket.

The workflow's state lives in the bucket under ``workflows/<id>/`` exactly as a local
workflow folder holds it (``workflow.json``, each step's folder, the report). Each task
copies that prefix into a scratch folder, runs the *same* code as the local runner on it
(:mod:`evalrunner.workflow.runner`'s ``due``/``start``/``finish``/``fail`` and the step
functions of :mod:`evalrunner.workflow.steps`), and copies back what changed; so the
manifest, the digests and the resume rules are the local ones, and a second start with the
same id reuses every finished step.

The three run steps (evaluate, robustness, red team) do not run in the task: ``step`` writes
the run's suite under ``test-suites/_workflow/<id>/`` (the red team's attacks written by the
judge here first) and starts the run state machine with a normal run event; the state
machine waits and calls ``check`` until the run ends, which copies the run's report set into
the step's folder and records it as the local step would.
"""

from __future__ import annotations

import json
import shutil
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from botocore.exceptions import ClientError
from pydantic import BaseModel, Field

from evalrunner.errors import ConfigError, EvalRunnerError, EventError, ExecutionFailed
from evalrunner.judge.base import Judge
from evalrunner.storage import RunStore
from evalrunner.workflow import manifest as mf
from evalrunner.workflow import runner, steps
from evalrunner.workflow.config import Step, WorkflowConfig
from evalrunner.workflow.event import (
    MAX_DOCUMENT_BYTES,
    MAX_DOCUMENTS,
    MAX_SCRATCH_BYTES,
    WorkflowEvent,
    parse_workflow_event,
    run_suite_prefix,
    scratch,
)
from evalrunner.workflow.guards import not_ours, run_name, too_big, write_under
from evalrunner.workflow.lock import hold
from evalrunner.workflow.report import REPORT_HTML, REPORT_JSON, write_report
from evalrunner.workflow.steps import Context

#: The workflow's event as its first task stored it.
EVENT_NAME = "event.json"
#: The execution working on the workflow (one at a time).
LOCK_NAME = "lock.json"
#: Where the run steps' suites go: under the suite prefix (Prepare reads only there), in a
#: folder whose uploads start no run (:func:`evalrunner.upload.is_suite_upload`).
RUN_STEPS = (Step.EVALUATE, Step.ROBUSTNESS, Step.REDTEAM)
#: The scratch folder's inputs (documents, suite, labels), never copied back.
INPUTS = "inputs"


class StepState(BaseModel):
    """What a step task returns to the state machine: ``running`` while its run runs."""

    workflow_id: str
    step: Step
    status: str
    wait_seconds: int = 0
    execution: str | None = None


class WorkflowOutput(BaseModel):
    """The workflow execution's output: the verdict, each step's status, where the report is."""

    workflow_id: str
    verdict: str
    steps: dict[str, str] = Field(default_factory=dict)
    report: str
    report_json: str
    manifest: str
    error: str | None = None


@dataclass
class Deployed:
    """The deployed workflow over ``store`` (the runner bucket), starting runs of the state
    machine ``run_machine`` through ``sfn`` (a Step Functions client)."""

    store: RunStore
    sfn: Any
    run_machine: str
    #: Builds the writing judge (suite, attacks, artifacts) from the judge object; the
    #: handler's uses the bucket's judge cache.
    writer: Callable[[Mapping[str, Any]], Judge] | None = None
    #: The most a task copies into its scratch folder (the function's /tmp holds twice it).
    max_scratch_bytes: int = MAX_SCRATCH_BYTES
    #: The scratch folder's files as copied in (or last copied back), by digest.
    _seen: dict[Path, str] = field(default_factory=dict, init=False, repr=False)

    # -- tasks ----------------------------------------------------------------------------
    def begin(self, raw: Any, execution: str | None = None) -> dict[str, Any]:
        """Check the event (a bad field fails the execution here, naming it), check its
        inputs are in the bucket and fit one step's Lambda, hold the workflow for
        ``execution`` (this workflow execution) and store the event."""
        event = parse_workflow_event(raw)
        self._inputs(event, None)  # nothing written yet: missing or oversized inputs say so
        self._listed(event, None)  # and what every task will copy fits its scratch folder
        if execution:
            hold(
                self.store,
                self._key(event.workflow_id, LOCK_NAME),
                event.workflow_id,
                execution,
                self._running,
            )
        data = event.model_dump_json(exclude_defaults=False).encode("utf-8")
        self.store.put_bytes(
            self._key(event.workflow_id, EVENT_NAME), data, "application/json", redact=False
        )
        return {"workflow_id": event.workflow_id, "wait_seconds": event.wait_seconds}

    def step(self, workflow_id: str, step: Step) -> dict[str, Any]:
        """Run ``step`` (a run step: start its run), unless it is finished with the same
        inputs."""
        event, ctx = self._open(workflow_id, step)
        digest = runner.due(ctx, step)
        if digest is None:
            return self._state(event, step, "done")
        run_step = step in RUN_STEPS and not (
            step is Step.ROBUSTNESS and not ctx.config.perturbations
        )
        if run_step:
            followed = self._started_run(workflow_id, ctx, step, digest)
            if followed is not None:  # a run this step started for the same inputs: follow it
                return self._state(event, step, "running", followed)
        started = runner.start(ctx, step, digest)
        # saved before the step works (or, for a run step, writes its suite, the red team's
        # attacks by the judge): a Lambda killed by its timeout leaves this started record
        # in the bucket, and the failure branch's report records that step as failed
        self._save(workflow_id, ctx)
        try:
            if run_step:
                return self._start_run(event, ctx, step, digest)
            record = runner.step_function(step)(ctx)
        except EvalRunnerError as exc:
            runner.fail(ctx, step, digest, started, str(exc))
            self._save(workflow_id, ctx)
            raise
        except Exception as exc:
            # a bug, not bad input: still the step's error in the manifest and the report,
            # so the report and the next start say which step broke and how
            runner.fail(ctx, step, digest, started, _unexpected(exc))
            self._save(workflow_id, ctx)
            raise
        runner.finish(ctx, record, digest, started)
        self._save(workflow_id, ctx)
        return self._state(event, step, "done")

    def check(
        self, workflow_id: str, step: Step, execution: str | None = None, wait_seconds: int = 0
    ) -> dict[str, Any]:
        """Look at a run step's run (``execution``, as the step returned it): still running
        (one describe call, nothing copied), or record it as the local step does."""
        from evalrunner.engine.report_copy import download_set
        from evalrunner.reports.summary import summary_of_output

        if execution:
            running = self._describe(execution)
            if running is not None and running["status"] == "RUNNING":
                begun = running.get("startDate")
                elapsed = (
                    (datetime.now(UTC) - begun).total_seconds()
                    if isinstance(begun, datetime)
                    else 0.0
                )
                return StepState(
                    workflow_id=workflow_id,
                    step=step,
                    status="running",
                    wait_seconds=next_wait(wait_seconds, elapsed),
                    execution=execution,
                ).model_dump(mode="json")
        event, ctx = self._open(workflow_id, step)
        record = ctx.manifest.record(step)
        arn = record.facts.get("execution")
        if record.status == "done" and arn and execution in (None, arn):
            # this check already recorded the run (the task ran again after it succeeded: a
            # retried invocation is at-least-once): the same answer, nothing recorded twice
            return self._state(event, step, "done")
        if record.status != "pending" or not arn or record.inputs_digest is None:
            raise ConfigError(f"workflow {workflow_id}: the {step.value} step has no run started")
        digest, started = record.inputs_digest, record.started_at or mf.now()
        self._check_ours(workflow_id, ctx, step, str(arn), digest, started)
        found = self._describe(str(arn))
        if found is None:
            message = (
                f"workflow: the {step.value} step's run {arn} no longer exists (Step "
                "Functions keeps an execution's history for 90 days); start the workflow "
                "again with the same workflow_id to run the step again"
            )
            runner.fail(ctx, step, digest, started, message)
            self._save(workflow_id, ctx)
            raise ExecutionFailed(message)
        if found["status"] == "RUNNING":
            return self._state(event, step, "running", arn)
        if found["status"] != "SUCCEEDED":
            message = (
                f"workflow: the {step.value} step's run {arn} ended {found['status']}: "
                f"{_cause(found)}; start the workflow again with the same workflow_id to run "
                "the step again"
            )
            runner.fail(ctx, step, digest, started, message)
            self._save(workflow_id, ctx)
            raise ExecutionFailed(message)
        summary = summary_of_output(json.loads(found.get("output") or "{}"), self.store.get_bytes)
        out = ctx.folder / step.value
        download_set(summary, self.store.get_bytes, out)
        done = steps.run_record(step, summary, out, ctx)
        done.facts = {**done.facts, "execution": arn, "run_id": summary.run_id}
        if step is Step.ROBUSTNESS:
            done = steps.robustness_record(done, summary)
        elif step is Step.REDTEAM:
            done = steps.redteam_record(done, summary)
        runner.finish(ctx, done, digest, started)
        self._save(workflow_id, ctx)
        return self._state(event, step, "done")

    def report(self, workflow_id: str, error: Any = None) -> dict[str, Any]:
        """Write the workflow report (also after a failed step: it says which and why). It
        reads only the manifest, so only that is copied: the report is written even when the
        workflow is too big for a task's scratch folder."""
        event, folder, manifest = self._open_manifest(workflow_id)
        text = _error_text(error)
        if text:
            self._record_interrupted(folder, manifest, text)
        write_report(folder, manifest, event.suite_source(), [])
        self._save_files(workflow_id, folder)
        return WorkflowOutput(
            workflow_id=workflow_id,
            verdict=mf.verdict(manifest),
            steps={r.step.value: r.status for r in manifest.steps},
            report=self._key(workflow_id, REPORT_HTML),
            report_json=self._key(workflow_id, REPORT_JSON),
            manifest=self._key(workflow_id, mf.MANIFEST),
            error=_error_text(error),
        ).model_dump(mode="json")

    @staticmethod
    def _record_interrupted(folder: Path, manifest: mf.Manifest, error: str) -> None:
        """The step this execution started and never ended (its Lambda killed by the
        timeout after its retries, or a task failing outside the step's own code) recorded
        as failed with the execution's ``error``. A run step keeps the run it started, so
        the next start follows that run if it is still running or succeeded."""
        for record in manifest.steps:
            if record.status == "pending" and record.started_at and not record.finished_at:
                manifest.replace(
                    record.model_copy(
                        update={
                            "status": "failed",
                            "error": f"workflow: the {record.step.value} step did not "
                            f"finish: {error}; start the workflow again with the same "
                            "workflow_id to run it again",
                            "finished_at": mf.now(),
                        }
                    )
                )
        mf.save(folder, manifest)

    def _running(self, execution: str) -> bool:
        found = self._describe(execution)
        return found is not None and str(found["status"]) == "RUNNING"

    def _describe(self, execution: str) -> dict[str, Any] | None:
        """The execution as Step Functions describes it; None when it does not exist (its
        history expired, or the ARN was never an execution)."""
        try:
            return dict(self.sfn.describe_execution(executionArn=execution))
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") == "ExecutionDoesNotExist":
                return None
            raise

    # -- the run steps --------------------------------------------------------------------
    def _check_ours(
        self, workflow_id: str, ctx: Context, step: Step, arn: str, digest: str, started: str
    ) -> None:
        """Refuse, recorded as the step's error, a recorded run this workflow did not start
        (``workflow.json`` changed by hand): it is neither followed nor its report copied."""
        message = not_ours(self.run_machine, workflow_id, step, arn)
        if message is not None:
            runner.fail(ctx, step, digest, started, message)
            self._save(workflow_id, ctx)
            raise ConfigError(message)

    def _started_run(self, workflow_id: str, ctx: Context, step: Step, digest: str) -> str | None:
        """The run an earlier execution started for this step with the same inputs and
        that is running or finished (the workflow execution was stopped while it ran, or
        the task was retried): it is followed, not started again."""
        record = ctx.manifest.record(step)
        arn = record.facts.get("execution")
        if record.status not in ("pending", "failed") or record.inputs_digest != digest or not arn:
            return None
        self._check_ours(workflow_id, ctx, step, str(arn), digest, record.started_at or mf.now())
        found = self._describe(str(arn))
        if found is None or found["status"] not in ("RUNNING", "SUCCEEDED"):
            return None  # ended badly, or gone (past the history's retention): run it again
        if record.status == "failed":  # the task failed, not the run: follow the run again
            ctx.manifest.replace(
                record.model_copy(update={"status": "pending", "error": None, "finished_at": None})
            )
            mf.save(ctx.folder, ctx.manifest)
            self._save(workflow_id, ctx)
        return str(arn)

    def _start_run(
        self, event: WorkflowEvent, ctx: Context, step: Step, digest: str
    ) -> dict[str, Any]:
        from evalrunner.api.inputs import suite_file
        from evalrunner.redteam.api import redteam_event

        spec = dict(ctx.config.target)
        if step is Step.REDTEAM:
            planned = steps.redteam_plan(ctx, spec)
            folder = ctx.folder / step.value
            folder.mkdir(parents=True, exist_ok=True)
            suite = suite_file(planned.rows, folder, "attacks")
            r = ctx.config.redteam
            run = redteam_event(
                suite.name,
                spec,
                planned,
                min_resisted=r.min_resisted,
                fail_on=ctx.config.fail_on,
                max_concurrency=ctx.config.max_concurrency,
            )
        else:
            suite = ctx.suite()
            run = (
                steps.evaluate_event(ctx, suite.name, spec)
                if step is Step.EVALUATE
                else steps.robustness_event(ctx, suite.name, spec)
            )
        key = f"{run_suite_prefix(event.workflow_id)}{step.value}-{digest[:12]}{suite.suffix}"
        self.store.put_bytes(key, suite.read_bytes(), "application/octet-stream", redact=False)
        run["key"] = key
        arn = self.sfn.start_execution(
            stateMachineArn=self.run_machine,
            name=run_name(event.workflow_id, step, uuid.uuid4().hex[:12]),
            input=json.dumps(run),
        )["executionArn"]
        runner.start(ctx, step, digest, execution=arn, suite=key)
        self._save(event.workflow_id, ctx)
        return self._state(event, step, "running", arn)

    # -- the scratch folder ---------------------------------------------------------------
    def _key(self, workflow_id: str, rel: str) -> str:
        return f"{WorkflowEvent.folder_prefix(workflow_id)}{rel}"

    def _event(self, workflow_id: str) -> WorkflowEvent:
        prefix = WorkflowEvent.folder_prefix(workflow_id)
        raw = self.store.get_bytes_or_none(prefix + EVENT_NAME)
        if raw is None:
            raise EventError(
                f"workflow {workflow_id}: no {prefix}{EVENT_NAME}; start the workflow state "
                "machine with the workflow event"
            )
        return parse_workflow_event(json.loads(raw))

    def _sizes(self, prefix: str) -> list[tuple[str, int]]:
        """The objects under ``prefix`` (not folder markers) and their listed sizes."""
        return [
            (o["Key"], int(o.get("Size", 0)))
            for page in self.store.s3.get_paginator("list_objects_v2").paginate(
                Bucket=self.store.bucket, Prefix=prefix
            )
            for o in page.get("Contents", [])
            if not o["Key"].endswith("/")
        ]

    def _listed(self, event: WorkflowEvent, step: Step | None) -> list[str]:
        """The workflow's keys a task copies, once their listed sizes and the inputs' are
        found to fit its scratch folder; otherwise refused before anything is copied (and
        recorded as ``step``'s error, when a step's task)."""
        prefix = WorkflowEvent.folder_prefix(event.workflow_id)
        own = [
            (key, size)
            for key, size in self._sizes(prefix)
            if key[len(prefix) :] not in (EVENT_NAME, LOCK_NAME)
        ]
        inputs = self._sizes(event.documents) if event.documents else []
        for key in (event.suite, event.labels):
            inputs += [kv for kv in self._sizes(key) if kv[0] == key] if key else []
        message = too_big(own + inputs, self.max_scratch_bytes, self.store.bucket)
        if message is None:
            return [key for key, _ in own]
        if step is not None:
            _, folder, manifest = self._open_manifest(event.workflow_id)
            record = manifest.record(step)
            manifest.replace(
                record.model_copy(
                    update={
                        "status": "failed",
                        "error": message,
                        "started_at": record.started_at or mf.now(),
                        "finished_at": mf.now(),
                    }
                )
            )
            mf.save(folder, manifest)
            self._save_files(event.workflow_id, folder)
        raise ConfigError(message)

    def _open_manifest(self, workflow_id: str) -> tuple[WorkflowEvent, Path, mf.Manifest]:
        """Only the workflow's manifest copied into a fresh scratch folder (what the report
        and a refusal need)."""
        event = self._event(workflow_id)
        folder = scratch(workflow_id)
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        raw = self.store.get_bytes_or_none(self._key(workflow_id, mf.MANIFEST))
        if raw is not None:
            write_under(folder, mf.MANIFEST, raw)
        manifest = mf.load(
            folder,
            where=f"s3://{self.store.bucket}/{self._key(workflow_id, mf.MANIFEST)}",
            fix=f"delete it to start the workflow {workflow_id} again, or give another workflow_id",
        )
        self._seen = {p: mf.digest_file(p) for p in _files(folder)}
        return event, folder, manifest

    def _open(self, workflow_id: str, step: Step | None = None) -> tuple[WorkflowEvent, Context]:
        """The workflow's prefix copied into a fresh scratch folder, and its context; refused
        before copying when it would not fit (recorded as ``step``'s error)."""
        prefix = WorkflowEvent.folder_prefix(workflow_id)
        event = self._event(workflow_id)
        keys = self._listed(event, step)
        folder = scratch(workflow_id)
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        for key in keys:
            write_under(folder, key[len(prefix) :], self.store.get_bytes(key))
        config = self._inputs(event, folder)
        ctx = Context(
            config=config,
            folder=folder,
            target=config.target,
            manifest=mf.load(
                folder,
                where=f"s3://{self.store.bucket}/{prefix}{mf.MANIFEST}",
                fix=f"delete it to start the workflow {workflow_id} again, or give another "
                "workflow_id",
            ),
            judge=config.judge,
            writer=self.writer,
        )
        self._seen = {p: mf.digest_file(p) for p in _files(folder)}
        return event, ctx

    def _inputs(self, event: WorkflowEvent, folder: Path | None) -> WorkflowConfig:
        """The event's inputs copied from the bucket under ``folder/inputs`` (None: only
        checked), and the event as the runner's configuration over them."""
        fields = event.model_dump(exclude={"workflow_id", "wait_seconds"})
        root = folder / INPUTS if folder is not None else None
        if event.documents:
            listed = self._sizes(event.documents)
            if not listed:
                raise EventError(
                    f"documents: nothing under s3://{self.store.bucket}/{event.documents}"
                )
            if len(listed) > MAX_DOCUMENTS:
                raise EventError(
                    f"documents: {len(listed)} objects under {event.documents}, more than one "
                    f"generate step reads ({MAX_DOCUMENTS}); use a narrower prefix"
                )
            total = sum(size for _, size in listed)
            if total > MAX_DOCUMENT_BYTES:
                raise EventError(
                    f"documents: {total / 2**20:.1f} MiB under {event.documents}, more than "
                    f"one generate step reads ({MAX_DOCUMENT_BYTES // 2**20} MiB); use a "
                    "narrower prefix"
                )
            if root is not None:
                for key, _ in listed:
                    rel = key[len(event.documents) :]
                    write_under(root / "documents", rel, self.store.get_bytes(key))
                fields["documents"] = str(root / "documents")
        for name in ("suite", "labels"):
            key = getattr(event, name)
            if not key:
                continue
            data_or_none = self.store.get_bytes_or_none(key)
            if data_or_none is None:
                raise EventError(f"{name}: s3://{self.store.bucket}/{key} does not exist")
            if root is not None:
                path = write_under(root / name, key.rsplit("/", 1)[-1], data_or_none)
                fields[name] = str(path)
        return WorkflowConfig.model_validate(fields)

    def _save(self, workflow_id: str, ctx: Context) -> None:
        self._save_files(workflow_id, ctx.folder)

    def _save_files(self, workflow_id: str, folder: Path) -> None:
        """Copy back every file of the scratch folder that is new or changed (not the
        inputs), the manifest last, so a reader never sees a manifest naming a missing file."""
        seen = self._seen
        inputs = folder / INPUTS
        manifest = folder / mf.MANIFEST
        changed = [
            p
            for p in _files(folder)
            if not p.is_relative_to(inputs) and seen.get(p) != mf.digest_file(p)
        ]
        for path in sorted(changed, key=lambda p: p == manifest):
            rel = path.relative_to(folder).as_posix()
            self.store.put_bytes(
                self._key(workflow_id, rel), path.read_bytes(), _content_type(path), redact=False
            )
            seen[path] = mf.digest_file(path)

    @staticmethod
    def _state(
        event: WorkflowEvent, step: Step, status: str, execution: str | None = None
    ) -> dict[str, Any]:
        return StepState(
            workflow_id=event.workflow_id,
            step=step,
            status=status,
            wait_seconds=event.wait_seconds,
            execution=execution,
        ).model_dump(mode="json")


#: The longest wait between two looks at a run that has run long (see :func:`next_wait`).
MAX_WAIT_SECONDS = 600


def next_wait(wait_seconds: int, elapsed: float) -> int:
    """The wait before the next look at a run that has run ``elapsed`` seconds: the
    event's ``wait_seconds`` at first, then a tenth of the run's time so far (at most
    :data:`MAX_WAIT_SECONDS`, never less than the last wait). Each look is about nine events
    of the workflow execution's history, which Step Functions caps at 25,000: at a fixed
    30 s the looks alone would fail the execution after about 23 hours of runs (after 46
    minutes at 1 s); so the looks of a long run grow sparse instead."""
    return max(wait_seconds, min(MAX_WAIT_SECONDS, int(elapsed // 10)))


def _cause(found: Mapping[str, Any]) -> str:
    cause = str(found.get("cause") or found.get("error") or "no cause given")
    try:
        payload = json.loads(cause)
    except ValueError:
        return cause[:500]
    if isinstance(payload, dict) and "errorMessage" in payload:
        return str(payload["errorMessage"])[:500]
    return cause[:500]


def _unexpected(exc: Exception) -> str:
    """An unexpected exception as the step's error: its type and message, masked."""
    from evalrunner.redaction import redact

    return redact(f"workflow: unexpected {type(exc).__name__}: {exc}")[:500]


def _error_text(error: Any) -> str | None:
    """The caught error (``{"Error": ..., "Cause": ...}``) as one line."""
    if not error:
        return None
    if isinstance(error, Mapping):
        return _cause({"cause": error.get("Cause"), "error": error.get("Error")})
    return str(error)[:500]


def _files(folder: Path) -> list[Path]:
    return [p for p in folder.rglob("*") if p.is_file() and not p.name.startswith(".workflow-")]


def _content_type(path: Path) -> str:
    return {
        ".json": "application/json",
        ".html": "text/html; charset=utf-8",
        ".md": "text/markdown; charset=utf-8",
        ".txt": "text/plain; charset=utf-8",
        ".csv": "text/csv; charset=utf-8",
    }.get(path.suffix.lower(), "application/octet-stream")
