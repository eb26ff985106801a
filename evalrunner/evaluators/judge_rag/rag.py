"""The metric functions of the RAG family: Faithfulness, Answer Relevancy (statement based
and question generation), Contextual Precision, Recall and Relevancy.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from evalrunner.evaluators.base import (
    Sample,
    Scored,
    SkipCase,
)
from evalrunner.evaluators.judge_rag.rubrics import (
    ANSWER_CHECKS_RUBRIC,
    ANSWER_RELEVANCY_RUBRIC,
    CONTEXTUAL_PRECISION_RUBRIC,
    CONTEXTUAL_RECALL_RUBRIC,
    CONTEXTUAL_RELEVANCY_RUBRIC,
    CONTRADICTION_RUBRIC,
)
from evalrunner.evaluators.judge_rag.shared import (
    N_QUESTIONS,
    NO_EA_STATEMENTS,
    PENDING_NOTE,
    Similarity,
    _because,
    _because_text,
    _chunks,
    _q,
    lexical_similarity,
    weighted_precision,
)
from evalrunner.judge import prompts
from evalrunner.judge.base import Judge
from evalrunner.judge.extract import (
    CountedReply,
    StatementCheck,
    ask,
    counted,
    judged_statements,
    judged_text,
    statement_checks,
    statements,
    verdicts,
)
from evalrunner.judge.extract import claims as extract_claims

# --- metric functions (shared by the evaluators and the composite) ------------------------------


def _answer_checks(judge: Judge, sample: Sample, found: list[str]) -> list[StatementCheck]:
    """Support AND relevance of the answer's statements in ONE call. Faithfulness and Answer
    Relevancy send the identical prompt (question, non-blank chunks, statements), so the
    second is a cache hit."""
    return statement_checks(
        judge,
        found,
        rubric=ANSWER_CHECKS_RUBRIC,
        purpose="answer statement checks",
        question=sample.question,
        context=_chunks(sample),
    )


#: How a claim the retrieved context neither supports nor contradicts counts in Faithfulness:
#: "unfaithful" (Ragas, and this project's default) or "faithful" (DeepEval).
NotInContext = Literal["unfaithful", "faithful"]


def faithfulness(
    judge: Judge, sample: Sample, *, not_in_context: NotInContext = "unfaithful"
) -> Scored:
    assert sample.answer is not None
    _chunks(sample)  # no usable context → skipped before any call
    found = extract_claims(judge, sample.answer)
    if not found:
        return Scored(1.0, "the answer makes no claims, so none is unsupported")
    judged = _answer_checks(judge, sample, found)
    supported = sum(c.supported for c in judged)
    failed = [(s, c) for s, c in zip(found, judged, strict=True) if not c.supported]
    if not failed:
        return Scored(1.0, f"all {len(found)} claims are supported by the retrieved context")
    if not_in_context == "faithful":
        return _faithful_unless_contradicted(judge, sample, found, [s for s, _ in failed])
    claim, check = failed[0]
    return Scored(
        supported / len(found),
        f"{supported} of {len(found)} claims supported by the retrieved context; first "
        f"unsupported: {_q(claim)}{_because(check)}",
    )


def _faithful_unless_contradicted(
    judge: Judge, sample: Sample, found: list[str], unsupported: list[str]
) -> Scored:
    """DeepEval's count: only a claim the context contradicts is unfaithful; one it is silent
    about counts as faithful. One more call, for the unsupported claims only."""
    judged = verdicts(
        judge,
        unsupported,
        rubric=CONTRADICTION_RUBRIC,
        purpose="faithfulness contradictions",
        context=_chunks(sample),
    )
    contradicted = [(s, v) for s, v in zip(unsupported, judged, strict=True) if v.verdict]
    silent = len(unsupported) - len(contradicted)
    head = (
        f"{len(found) - len(contradicted)} of {len(found)} claims faithful ({silent} the "
        "retrieved context neither supports nor contradicts, counted as faithful)"
    )
    if not contradicted:
        return Scored(1.0, head)
    claim, verdict = contradicted[0]
    return Scored(
        1 - len(contradicted) / len(found),
        f"{head}; first contradicted: {_q(claim)}{_because(verdict)}",
    )


def answer_relevancy(judge: Judge, sample: Sample) -> Scored:
    """With retrieved context, the verdicts come from the call Faithfulness makes too; without
    any (or with only blank chunks), from a relevance-only call that needs no context."""
    assert sample.answer is not None
    found = statements(judge, sample.answer)
    if not found:
        return Scored(0.0, "the answer makes no statements, so nothing in it is relevant")
    if any(c.strip() for c in sample.contexts):
        relevance: Sequence[tuple[bool, str]] = [
            (c.relevant, c.reason) for c in _answer_checks(judge, sample, found)
        ]
    else:
        relevance = [
            (v.verdict, v.reason)
            for v in verdicts(
                judge,
                found,
                rubric=ANSWER_RELEVANCY_RUBRIC,
                purpose="answer relevancy verdicts",
                question=sample.question,
            )
        ]
    relevant = sum(r for r, _ in relevance)
    failed = [(s, why) for s, (r, why) in zip(found, relevance, strict=True) if not r]
    if not failed:
        return Scored(1.0, f"all {len(found)} statements of the answer are relevant")
    statement, why = failed[0]
    return Scored(
        relevant / len(found),
        f"{relevant} of {len(found)} statements relevant to the question; first irrelevant: "
        f"{_q(statement)}{_because_text(why)}",
    )


def contextual_precision(judge: Judge, sample: Sample) -> Scored:
    assert sample.expected_answer is not None
    _chunks(sample)  # all blank → skipped
    ranked = list(sample.contexts)
    asked = [i for i, c in enumerate(ranked) if c.strip()]
    judged = verdicts(
        judge,
        [ranked[i] for i in asked],
        rubric=CONTEXTUAL_PRECISION_RUBRIC,
        purpose="contextual precision verdicts",
        question=sample.question,
        expected_answer=sample.expected_answer,
        item_tag="chunk",
        container="context",
    )
    relevance = [False] * len(ranked)
    for i, v in zip(asked, judged, strict=True):
        relevance[i] = v.verdict
    value = weighted_precision(relevance)
    ranks = [k for k, r in enumerate(relevance, start=1) if r]
    if not ranks:
        return Scored(0.0, f"none of the {len(ranked)} retrieved chunks is relevant")
    reason = f"relevant chunks at ranks {_ranks(ranks)} of {len(ranked)}"
    misplaced = next((k for k, r in enumerate(relevance, start=1) if not r and k < ranks[-1]), None)
    if misplaced is not None:
        reason += f"; irrelevant chunk {misplaced} is ranked above a relevant one"
    return Scored(value, reason)


def _ranks(ranks: Sequence[int]) -> str:
    return ", ".join(map(str, ranks))


def contextual_recall(judge: Judge, sample: Sample) -> Scored:
    assert sample.expected_answer is not None
    chunks = _chunks(sample)
    judged = judged_text(
        judge,
        sample.expected_answer,
        tag="expected_answer",
        rubric=CONTEXTUAL_RECALL_RUBRIC,
        purpose="contextual recall statements",
        context=chunks,
    )
    if not judged:
        raise SkipCase(NO_EA_STATEMENTS)
    n = len(judged)
    attributable = sum(s.verdict for s in judged)
    failed = [s for s in judged if not s.verdict]
    if not failed:
        return Scored(1.0, f"all {n} statements of the expected answer are in the context")
    first = failed[0]
    return Scored(
        attributable / n,
        f"{attributable} of {n} expected-answer statements attributable to the retrieved "
        f"context; first missing: {_q(first.statement)}{_because_text(first.reason)}",
    )


def contextual_relevancy(judge: Judge, sample: Sample) -> Scored:
    chunks = _chunks(sample)
    per_chunk = judged_statements(
        judge,
        chunks,
        rubric=CONTEXTUAL_RELEVANCY_RUBRIC,
        purpose="contextual relevancy statements",
        question=sample.question,
    )
    total = sum(len(s) for s in per_chunk)
    if total == 0:
        return Scored(0.0, "the judge found no statements in the retrieved context")
    relevant = sum(s.verdict for chunk in per_chunk for s in chunk)
    if relevant == total:
        return Scored(1.0, f"all {total} statements of the retrieved context are relevant")
    useless = [i for i, chunk in enumerate(per_chunk, start=1) if not any(s.verdict for s in chunk)]
    first = next(s for chunk in per_chunk for s in chunk if not s.verdict)
    reason = f"{relevant} of {total} context statements relevant to the question"
    if useless:
        reason += f"; chunks with nothing relevant: {_ranks(useless)}"
    reason += f"; first irrelevant: {_q(first.statement)}"
    return Scored(relevant / total, reason)


class GeneratedQuestions(CountedReply):
    questions: list[str]
    noncommittal: bool = False


def generated_questions(judge: Judge, answer: str) -> GeneratedQuestions:
    """N questions the answer answers, written from the answer alone (never shown Q)."""
    schema = counted(GeneratedQuestions, questions=N_QUESTIONS)
    messages = prompts.build(
        f"Write exactly {N_QUESTIONS} different questions that the answer inside <answer> "
        "answers: each a single question a user could have asked to get this answer, in the "
        "language of the answer. Also decide whether the answer is noncommittal: true when it "
        "is evasive, vague or declines to answer (for example 'I don't know' or 'I cannot "
        "help with that'), false otherwise.",
        [prompts.tagged("answer", answer)],
        'Reply as {"questions": ["<question>", ...], "noncommittal": true or false} with '
        f"exactly {N_QUESTIONS} questions.",
    )
    return ask(judge, messages, schema, purpose="question generation")


class QuestionParts(BaseModel):
    """The judge's part of Answer relevancy (question generation), kept on its result so the
    Score step can recompute the score with an embedding similarity."""

    model_config = ConfigDict(extra="forbid")

    questions: list[str] = Field(min_length=1)


def relevancy_qg_score(
    sample: Sample, parts: QuestionParts, similarity: Similarity, note: str
) -> Scored:
    """Mean similarity of Q to the generated questions: the one definition, used per case
    (with the stand-in) and by the Score step (with embeddings)."""
    scores = [similarity(sample.question, q) for q in parts.questions]
    value = sum(scores) / len(scores)
    worst = min(range(len(scores)), key=scores.__getitem__)
    return Scored(
        value,
        f"mean similarity {value:.3f} of the question to {len(scores)} questions the answer "
        f"answers ({note}); least similar ({scores[worst]:.3f}): "
        f"{_q(parts.questions[worst])}",
        parts=parts.model_dump(),
    )


def answer_relevancy_qg(
    judge: Judge,
    sample: Sample,
    similarity: Similarity = lexical_similarity,
    note: str = PENDING_NOTE,
) -> Scored:
    assert sample.answer is not None
    if not sample.answer.strip():
        return Scored(0.0, "the answer is empty")
    reply = generated_questions(judge, sample.answer)
    if reply.noncommittal:  # 0 by definition: no similarity part to recompute
        return Scored(0.0, "the answer is noncommittal (evasive or declines to answer)")
    return relevancy_qg_score(sample, QuestionParts(questions=reply.questions), similarity, note)
