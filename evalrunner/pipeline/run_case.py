"""Run one case × iteration: call the target, run the per-case evaluators, write the record;
and a Map task's batch of them, one after another.

Idempotent: a case that already has a successful record is not sent to the target again, so
Step Functions retries and re-driven executions cost nothing twice.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from evalrunner.errors import TargetError
from evalrunner.evaluators import Evaluator, MetricResult, Requirement, Sample
from evalrunner.judge.base import CURRENT_CASE, CaseUsage
from evalrunner.pipeline.context import RunContext
from evalrunner.redaction import redact
from evalrunner.run import (
    BatchReply,
    CaseRecord,
    CaseReply,
    ManifestBatch,
    ManifestItem,
    StepFailure,
)
from evalrunner.sanitize import (
    DEFAULT_MAX_TEXT_CHARS,
    cap_text,
    is_clean,
    sanitize_text,
    sanitize_value,
)
from evalrunner.storage import RunStore
from evalrunner.suite.model import TestCase, Turn
from evalrunner.targets.base import Target, TargetResponse
from evalrunner.targets.logged import logged_response

#: Evaluators that run per case in the fan-out; the others wait for the Score step.
PER_CASE = (Requirement.NOTHING, Requirement.LOCAL_MODEL, Requirement.JUDGE)

#: Seconds a task keeps in hand before starting another case: at least this, or twice its
#: slowest case so far, must be left of its time limit (see :func:`run_batch`).
MIN_CASE_RESERVE_S = 60.0

logger = logging.getLogger(__name__)


def sample_of(
    case: TestCase,
    response: TargetResponse | None = None,
    max_text_chars: int = DEFAULT_MAX_TEXT_CHARS,
) -> Sample:
    """What evaluators see; without a response, only the case's own inputs (for checks)."""
    return capped_sample(case, response, max_text_chars)[0]


def capped_sample(
    case: TestCase, response: TargetResponse | None, max_text_chars: int
) -> tuple[Sample, list[str]]:
    """The sample with every text cut to ``max_text_chars``, and a note per text that was.

    The one place evaluators' input is bounded: per-case, batched and aggregate evaluators
    all get their samples here, so a 5 MB answer costs each of them 100k characters at most.
    """
    notes: list[str] = []

    def cap(where: str, text: str | None) -> str | None:
        if text is None:
            return None
        kept, cut = cap_text(text, max_text_chars)
        if cut:
            notes.append(
                f"truncated: {where} has {len(text):,} characters; evaluators examined the "
                f"first {max_text_chars:,} (the run's max_text_chars)"
            )
        return kept

    def caps(where: str, texts: list[str]) -> list[str]:
        return [cap(f"{where}[{i}]", t) or "" for i, t in enumerate(texts)]

    sample = Sample(
        question=cap("question", case.question) or "",
        case_id=case.case_id,
        metadata=case.metadata,
        expected_answer=cap("expected_answer", case.expected_answer),
        expected_contexts=caps("expected_contexts", case.expected_contexts),
        expected_intent=case.expected_intent,
        expected_tool=case.expected_tool,
        expected_documents=case.expected_documents,
        expected_tools=case.expected_tools,
        expected_steps=case.expected_steps,
        expected_data=case.expected_data,
        condition=case.condition,
        categories=case.categories,
        answer=cap("answer", response.answer) if response else None,
        contexts=caps("contexts", response.contexts) if response else [],
        documents=response.documents if response else [],
        tool=response.tool if response else None,
        steps=response.steps if response else [],
        intent=response.intent if response else None,
        data=response.data if response else None,
        false_fact=case.perturbation.false_fact if case.perturbation else None,
        # a conversation before it is played: its user turns (run_conversation gives the
        # conversational evaluators the turns as they happened)
        turns=[Turn(role="user", content=t.question) for t in case.turns],
    )
    return sample, notes


def capped_response(
    response: TargetResponse, max_text_chars: int
) -> tuple[TargetResponse, list[str]]:
    """The response with its answer and each context cut to ``max_text_chars``, and a note
    per text that was. The record and every report keep what the evaluators examined, so a
    huge answer costs no more downstream (CSV, xlsx, HTML, JSON) than the cap."""
    notes: list[str] = []

    def cap(where: str, text: str) -> str:
        kept, cut = cap_text(text, max_text_chars)
        if cut:
            notes.append(
                f"truncated: {where} has {len(text):,} characters; the first "
                f"{max_text_chars:,} were kept and evaluated (the run's max_text_chars)"
            )
        return kept

    answer = cap("answer", response.answer)
    contexts = [cap(f"contexts[{i}]", c) for i, c in enumerate(response.contexts)]
    if not notes:
        return response, notes
    return response.model_copy(update={"answer": answer, "contexts": contexts}), notes


def sanitized_response(response: TargetResponse) -> tuple[TargetResponse, list[str]]:
    """The response with its text cleaned (see :mod:`evalrunner.sanitize`) and a note per
    field that had characters replaced. Every answer passes here, a target's or a
    precomputed test-lab one, so the record can always be stored and reported."""
    data = response.model_dump()
    if is_clean(data):  # nearly every answer: one scan of its text, nothing copied
        return response, []
    notes: list[str] = []
    for name, value in data.items():
        if not value or not isinstance(value, str | list | dict):
            continue  # no text in it (None, a number, an empty list): nothing to clean
        cleaned, found = sanitize_value(value)
        if found:
            data[name] = cleaned
            notes.append(found.describe(name))
    return (TargetResponse.model_validate(data) if notes else response), notes


def not_scored(evaluators: list[Evaluator], reason: str) -> list[MetricResult]:
    """Error results for every metric of a case that produced no answer."""
    return [
        MetricResult(
            evaluator=e.name,
            metric=m.name,
            status="error",
            threshold=e.threshold(m.name),
            reason=reason,
        )
        for e in evaluators
        for m in e.metrics
    ]


def call_target(
    target: Target, case: TestCase, clock: Callable[[], float] = time.perf_counter
) -> tuple[TargetResponse, float]:
    """The target's answer and its latency in ms (the target's own figure when it reports
    one, else the time the call took)."""
    start = clock()
    response = target.invoke(case)
    elapsed_ms = (clock() - start) * 1000
    return response, response.latency_ms if response.latency_ms is not None else elapsed_ms


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
        # Imported here: a conversation plays its turns with this module's scoring helpers.
        from evalrunner.pipeline.conversations import run_conversation

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


def answer_and_score(
    context: RunContext,
    case: TestCase,
    record: CaseRecord,
    evaluators: list[Evaluator],
    ask: Callable[[], tuple[TargetResponse, float | None]],
    usage: CaseUsage,
) -> None:
    """Get the case's answer from ``ask`` and score it into ``record``: a target error is
    recorded (every metric not scored), never raised. One case, or one turn of a
    conversation; the judge's calls are counted in ``usage``."""
    config = context.config
    record.notes, record.sanitized = list(case.notes), bool(case.notes)
    try:
        if case.perturbation is not None and case.perturbation.error:
            # Nothing was perturbed: asking the target would test the original again.
            raise TargetError(f"not perturbed: {case.perturbation.error}")
        response, latency = ask()
        response, truncated = capped_response(response, config.max_text_chars)
        response, sanitized = sanitized_response(response)
    except TargetError as exc:
        record.status, record.error = "target_error", exc.message
    except Exception as exc:  # a target bug must not lose the case
        record.status, record.error = "target_error", f"{type(exc).__name__}: {exc}"
    else:
        record.response, record.latency_ms = response, latency
        record.notes += sanitized
        record.sanitized = bool(record.notes)
        record.notes += response.notes  # target-reported numbers that were ignored
        sample, cut = capped_sample(case, response, config.max_text_chars)
        record.notes += truncated + cut
        record.truncated = bool(truncated or cut)
        token = CURRENT_CASE.set(usage)
        try:
            record.results = [r for e in evaluators for r in e.evaluate(sample)]
        finally:
            CURRENT_CASE.reset(token)

    if record.status != "ok":
        record.results = not_scored(evaluators, "not scored: the target call failed")
    if record.error:  # it may quote the target's text
        record.error = sanitize_text(record.error)[0]


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
