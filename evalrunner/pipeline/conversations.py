"""Scripted conversations through the run: played turn by turn in run_case, flattened into
rows for the Score and Aggregate steps.

A conversation is one Map item (its turns depend on the target's earlier answers, so they run
one after the other in one task) and one record that carries a record per turn. Each turn is
scored by the per-turn evaluators like a single-turn case; the ``conversational`` ones score
the whole conversation once (``Sample.turns``), on the conversation's own record. A target
error at turn k ends the conversation: the later turns are recorded as ``not_run`` with the
reason, and the conversation metrics are not scored; other cases are never affected.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Sequence

from evalrunner.evaluators import Evaluator, Sample
from evalrunner.judge.base import CURRENT_CASE, CaseUsage
from evalrunner.pipeline.context import RunContext
from evalrunner.pipeline.scoring import (
    answer_and_score,
    capped_sample,
    evaluate_all,
    not_scored,
)
from evalrunner.run import CaseRecord, ManifestItem
from evalrunner.sanitize import cap_text
from evalrunner.suite.model import TestCase, Turn
from evalrunner.targets.base import ConversationSession, Target, TargetResponse


def scores(evaluator: Evaluator | type[Evaluator], case: TestCase) -> bool:
    """Whether ``evaluator`` scores ``case``: a conversation's own record gets the
    conversational evaluators, a turn the others, a single-turn case all (a conversational
    one then skips it, saying the case is not a conversation)."""
    if case.is_conversation:
        return evaluator.conversational
    return case.turn is None or not evaluator.conversational


def applicable(case: TestCase, evaluators: Sequence[Evaluator]) -> list[Evaluator]:
    """The evaluators of ``evaluators`` that score ``case`` (see :func:`scores`)."""
    return [e for e in evaluators if scores(e, case)]


def scored_parts(case: TestCase) -> list[TestCase]:
    """What evaluators score of a suite case: the case itself, or a conversation and each of
    its turns (for the checks and default-metric choice Prepare makes before the run)."""
    return [case, *case.turns]


def turn_item_id(item_id: str, turn: int) -> str:
    """The id of one turn's row (and of its Score-step results): the conversation's item id
    and the turn number."""
    return f"{item_id}-t{turn}"


def call_turn(
    target: Target,
    case: TestCase,
    session: ConversationSession,
    clock: Callable[[], float] = time.perf_counter,
) -> tuple[TargetResponse, float]:
    """One turn's answer and its latency in ms (the target's own figure when it gives one)."""
    start = clock()
    response = target.invoke_turn(case, session)
    elapsed_ms = (clock() - start) * 1000
    return response, response.latency_ms if response.latency_ms is not None else elapsed_ms


def run_conversation(
    context: RunContext, item: ManifestItem, evaluators: list[Evaluator]
) -> CaseRecord:
    """Play the conversation's turns in one new session, each with the target's actual
    earlier answers, score each turn and then the whole conversation."""
    case = item.case
    record = CaseRecord.for_item(item)
    # One session per conversation × iteration × attempt: a re-run must not meet the memory
    # an earlier attempt left in the target.
    record.session_id = str(uuid.uuid4())
    per_turn = [e for e in evaluators if not e.conversational]
    whole = [e for e in evaluators if e.conversational]
    usage = CaseUsage()
    history = list(case.conversation)
    spoken: list[Turn] = []
    ended: str | None = None
    for position, turn in enumerate(case.turns, start=1):
        turn_record = CaseRecord(
            item_id=turn_item_id(item.item_id, turn.turn or position),
            case_id=turn.case_id,
            index=turn.index,
            iteration=item.iteration,
            status="ok",
        )
        record.turns.append(turn_record)
        if ended is not None:
            turn_record.status, turn_record.error = "not_run", ended
            turn_record.results = not_scored(per_turn, f"not scored: {ended}")
            continue
        asked = turn.model_copy(update={"conversation": list(history)})
        session = ConversationSession(
            id=record.session_id, position=position, prior=tuple(case.conversation)
        )

        def ask(
            asked: TestCase = asked, session: ConversationSession = session
        ) -> tuple[TargetResponse, float | None]:
            return call_turn(context.target, asked, session, context.clock)

        answer_and_score(context, asked, turn_record, per_turn, ask, usage)
        if turn_record.status != "ok" or turn_record.response is None:
            ended = f"not run: turn {turn.turn} failed, which ended the conversation"
            record.status = "target_error"
            record.error = f"turn {turn.turn} of {len(case.turns)}: {turn_record.error}"
            continue
        said = [
            Turn(role="user", content=turn.question),
            Turn(role="assistant", content=turn_record.response.answer),
        ]
        history += said
        spoken += said
    if ended is None:
        sample, notes = conversation_sample(case, record, spoken, context.config.max_text_chars)
        record.notes += notes
        record.truncated = bool(notes)
        token = CURRENT_CASE.set(usage)
        try:
            record.results = evaluate_all(whole, sample)
        finally:
            CURRENT_CASE.reset(token)
    else:
        record.results = not_scored(whole, f"not scored: the conversation ended early ({ended})")
    if any(e.asks_judge for e in evaluators):
        record.judge_usage = usage.as_dict()
    return record


def conversation_sample(
    case: TestCase, record: CaseRecord, spoken: list[Turn], max_text_chars: int
) -> tuple[Sample, list[str]]:
    """What a conversational evaluator sees: the last turn as question and answer (with its
    expectations), the conversation's own id, role and labels, and ``turns``: every user turn
    and the target's actual answer, in order, each cut to the run's ``max_text_chars``."""
    last = case.turns[-1]
    sample, notes = capped_sample(last, record.turns[-1].response, max_text_chars)
    turns = []
    for i, turn in enumerate(spoken):
        kept, cut = cap_text(turn.content, max_text_chars)
        if cut:
            notes.append(f"truncated: turns[{i}] has {len(turn.content):,} characters")
        turns.append(Turn(role=turn.role, content=kept))
    update = {
        "case_id": case.case_id,
        "metadata": case.metadata,
        "categories": case.categories,
        "turns": turns,
    }
    return sample.model_copy(update=update), notes


def transcript(turns: Sequence[TestCase], records: Sequence[CaseRecord]) -> str:
    """The conversation as it happened, one ``user:`` / ``assistant:`` line pair per turn
    answered (the conversation's own row in details.csv shows it as its answer)."""
    lines = []
    for turn, record in zip(turns, records, strict=False):
        if record.response is None:
            break
        lines += [f"user: {turn.question}", f"assistant: {record.response.answer}"]
    return "\n".join(lines)


def flatten(
    items: Sequence[ManifestItem], records: Sequence[CaseRecord | None]
) -> tuple[list[ManifestItem], list[CaseRecord | None]]:
    """One row per single-turn case, and per conversation its own row followed by one per
    turn: what the Score step scores and the reports show. A conversation whose task left no
    record leaves none for its turns either (Aggregate reports them as failed tasks)."""
    out_items: list[ManifestItem] = []
    out_records: list[CaseRecord | None] = []
    for item, record in zip(items, records, strict=True):
        out_items.append(item)
        if not item.case.is_conversation:
            out_records.append(record)
            continue
        turns = record.turns if record is not None else []
        if record is not None:
            answer = transcript(item.case.turns, turns)
            response = TargetResponse(answer=answer) if record.status == "ok" else None
            record = record.model_copy(update={"turns": [], "response": response})
        out_records.append(record)
        for n, turn in enumerate(item.case.turns):
            out_items.append(
                ManifestItem(
                    item_id=turn_item_id(item.item_id, turn.turn or n + 1),
                    iteration=item.iteration,
                    case=turn,
                )
            )
            out_records.append(turns[n] if n < len(turns) else None)
    return out_items, out_records
