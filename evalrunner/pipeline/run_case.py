"""Run one case × iteration: call the target, run the per-case evaluators, write the record;
and a Map task's batch of them, one after another.

Idempotent: a case that already has a successful record is not sent to the target again, so
Step Functions retries and re-driven executions cost nothing twice.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from evalrunner.evaluators import Requirement
from evalrunner.judge.base import CaseUsage
from evalrunner.pipeline.context import RunContext
from evalrunner.pipeline.conversations import run_conversation
from evalrunner.pipeline.scoring import answer_and_score, call_target
from evalrunner.redaction import redact
from evalrunner.run import (
    BatchReply,
    CaseRecord,
    CaseReply,
    ManifestBatch,
    ManifestItem,
    StepFailure,
)
from evalrunner.storage import RunStore
from evalrunner.targets.base import TargetResponse
from evalrunner.targets.logged import logged_response

#: Evaluators that run per case in the fan-out; the others wait for the Score step.
PER_CASE = (Requirement.NOTHING, Requirement.LOCAL_MODEL, Requirement.JUDGE)

#: Seconds a task keeps in hand before starting another case: at least this, or twice its
#: slowest case so far, must be left of its time limit (see :func:`run_batch`).
MIN_CASE_RESERVE_S = 60.0

logger = logging.getLogger(__name__)


def run_case(context: RunContext, item: ManifestItem) -> CaseReply:
    """Run one case × iteration and write its record; what became of it."""
    store = context.store
    key = store.record_key(context.run_id, item.item_id)
    existing = store.get_json_or_none(key) if context.may_have_record(item.item_id) else None
    if existing is not None and existing.get("status") == "ok":
        return CaseReply(item_id=item.item_id, status="ok", reused=True)

    evaluators = context.evaluators(PER_CASE)
    case = item.case
    if case.is_conversation:
        record = run_conversation(context, item, evaluators)
    else:
        record = CaseRecord.for_item(item)
        usage = CaseUsage()

        def ask() -> tuple[TargetResponse, float | None]:
            if case.answer is not None:  # answers computed elsewhere: score, don't call
                return logged_response(case), None
            return call_target(context.target, case, context.clock)

        answer_and_score(context, case, record, evaluators, ask, usage)
        if any(e.asks_judge for e in evaluators):
            record.judge_usage = usage.as_dict()
    store.put_json(key, record.model_dump(mode="json"))
    context.wrote_record(item.item_id)
    # the execution history keeps the error
    error = redact(record.error)[:500] if record.error else None
    return CaseReply(item_id=item.item_id, status=record.status, error=error)


def run_batch(
    context: RunContext,
    batch: ManifestBatch,
    seconds_left: Callable[[], float] | None = None,
) -> BatchReply:
    """Run a Map task's items one after another; what became of them, and the items it did
    not start (``remaining``, a batch the state machine gives to a new task; else None).

    ``seconds_left``: the time the task has before it is killed (a Lambda's remaining time).
    A case is started only while there is :data:`MIN_CASE_RESERVE_S`, or twice the slowest
    case so far, in hand; the first always is. A task that is killed anyway is caught by the
    state machine: its finished cases keep their records and the others are recorded as
    failed tasks (:func:`record_batch_failure`).

    A case that raises is recorded as a failed task and the batch goes on: one case's crash
    must not cost the cases after it in the same task (a write that fails for every case,
    e.g. the bucket gone, fails the task instead)."""
    items = context.manifest_items(batch)
    done = errors = 0
    slowest = 0.0
    for offset, item in enumerate(items):
        reserve = max(MIN_CASE_RESERVE_S, 2 * slowest)
        if offset and seconds_left is not None and seconds_left() < reserve:
            rest = ManifestBatch(first=batch.first + offset, count=batch.count - offset)
            logger.info("handing %d unstarted cases to a new task", rest.count)
            return BatchReply(done=done, errors=errors, remaining=rest)
        start = time.monotonic()
        try:
            status = run_case(context, item).status
        except Exception as exc:
            logger.exception("case %s failed its task", item.item_id)
            failure = StepFailure(error=type(exc).__name__, cause=redact(str(exc)))
            status = record_failure(context.store, context.run_id, item, failure).status
        slowest = max(slowest, time.monotonic() - start)
        done += 1
        errors += status != "ok"
    return BatchReply(done=done, errors=errors)


def record_batch_failure(
    context: RunContext, batch: ManifestBatch, failure: StepFailure
) -> BatchReply:
    """The state machine's Catch path for a whole task (a timeout, a crash): each of its
    items without a successful record gets a failed-task record."""
    items = context.manifest_items(batch)
    statuses = [
        record_failure(context.store, context.run_id, item, failure).status for item in items
    ]
    return BatchReply(done=len(statuses), errors=sum(s != "ok" for s in statuses))


def record_failure(
    store: RunStore, run_id: str, item: ManifestItem, failure: StepFailure
) -> CaseReply:
    """The state machine's Catch path: the case task itself failed (timeout, crash, throttle)."""
    key = store.record_key(run_id, item.item_id)
    existing = store.get_json_or_none(key)
    if existing is not None and existing.get("status") == "ok":
        return CaseReply(item_id=item.item_id, status="ok", reused=True)
    error = failure.error or "States.TaskFailed"
    cause = failure.cause or ""
    record = CaseRecord.for_item(
        item, "task_failed", f"{error}: {cause}"[:2000] if cause else error
    )
    store.put_json(key, record.model_dump(mode="json"))
    return CaseReply(
        item_id=redact(item.item_id),
        status=record.status,
        error=redact(record.error) if record.error else None,
    )
