"""The Conversations section of report.html: each scripted conversation × iteration with its
turns in order (the user's message, the expectation, the target's answer and the turn's
verdicts), then the conversation metrics and their reasons. Data are the flattened rows of
:mod:`evalrunner.pipeline.conversations`; the page is drawn by
``templates/conversations.html.j2``."""

from __future__ import annotations

from dataclasses import dataclass, field

from evalrunner.evaluators.base import MetricResult
from evalrunner.reports.model import CaseRow, ReportData

#: Conversations shown (failing ones first); details.csv and report.json have them all.
CONVERSATIONS_SHOWN = 50


@dataclass
class Verdict:
    """One metric's result on a turn or a conversation, as the page shows it."""

    metric: str
    outcome: str  # pass, fail, skipped, error
    score: float | None
    reason: str
    #: the evaluator's primary metric: only these decide whether a conversation failed
    primary: bool = False


@dataclass
class TurnView:
    turn: int
    case_id: str
    question: str
    expected_answer: str | None
    answer: str | None
    status: str
    error: str | None
    verdicts: list[Verdict] = field(default_factory=list)


@dataclass
class ConversationView:
    conversation_id: str
    iteration: int
    status: str
    error: str | None
    turns: list[TurnView]
    verdicts: list[Verdict]

    @property
    def failed(self) -> bool:
        """A turn or the conversation failed a primary metric, or did not run."""
        everything = self.verdicts + [v for t in self.turns for v in t.verdicts]
        return self.status != "ok" or any(
            v.primary and v.outcome in ("fail", "error") for v in everything
        )


@dataclass
class ConversationsView:
    conversations: list[ConversationView]
    more: int


def _verdicts(results: list[MetricResult], primary: set[tuple[str, str]]) -> list[Verdict]:
    out = []
    for r in results:
        if r.status == "scored":
            outcome = "pass" if r.success else "fail"
        else:
            outcome = "skipped" if r.status == "skipped" else "error"
        out.append(
            Verdict(
                metric=r.metric,
                outcome=outcome,
                score=r.score,
                reason=r.reason,
                primary=(r.evaluator, r.metric) in primary,
            )
        )
    return out


def _turn(row: CaseRow, primary: set[tuple[str, str]]) -> TurnView:
    return TurnView(
        turn=row.turn or 0,
        case_id=row.case_id,
        question=row.question,
        expected_answer=row.expected_answer,
        answer=row.answer,
        status=row.status,
        error=row.error,
        verdicts=_verdicts(row.results, primary),
    )


def conversations_view(data: ReportData) -> ConversationsView:
    """One view per conversation × iteration, failing ones first, then in run order."""
    primary = {(m.evaluator, m.metric) for m in data.metrics if m.primary}
    turns: dict[tuple[str, int], list[TurnView]] = {}
    for row in data.rows:
        if row.conversation_id is not None and row.turn is not None:
            turns.setdefault((row.conversation_id, row.iteration), []).append(_turn(row, primary))
    views = [
        ConversationView(
            conversation_id=row.conversation_id or row.case_id,
            iteration=row.iteration,
            status=row.status,
            error=row.error,
            turns=sorted(turns.get((row.case_id, row.iteration), []), key=lambda t: t.turn),
            verdicts=_verdicts(row.results, primary),
        )
        for row in data.rows
        if row.is_conversation
    ]
    ordered = sorted(views, key=lambda v: not v.failed)  # stable: run order within each
    return ConversationsView(
        conversations=ordered[:CONVERSATIONS_SHOWN],
        more=max(0, len(ordered) - CONVERSATIONS_SHOWN),
    )
