"""The metric functions judged against references: Hallucination (judge), Answer
correctness (factuality F1 and similarity) and the Ragas composite of the RAG functions.
"""

from __future__ import annotations

from collections.abc import Callable

from pydantic import BaseModel, ConfigDict, Field

from evalrunner.evaluators.base import (
    Sample,
    Scored,
    SkipCase,
)
from evalrunner.evaluators.judge_rag.rag import (
    answer_relevancy,
    contextual_precision,
    contextual_recall,
    faithfulness,
)
from evalrunner.evaluators.judge_rag.rubrics import (
    HALLUCINATION_RUBRIC,
)
from evalrunner.evaluators.judge_rag.shared import (
    NO_EA_STATEMENTS,
    PENDING_NOTE,
    Similarity,
    _because,
    _q,
    factuality_f1,
    harmonic_mean,
    lexical_similarity,
)
from evalrunner.judge import prompts
from evalrunner.judge.base import Judge
from evalrunner.judge.extract import (
    CountedReply,
    Verdict,
    ask,
    counted,
    evidence_blocks,
    statements,
    verdicts,
)


def hallucination(judge: Judge, sample: Sample) -> Scored:
    assert sample.answer is not None
    expected = [c for c in sample.expected_contexts if c.strip()]
    if not expected:
        raise SkipCase("the expected contexts are all blank")
    if not sample.answer.strip():
        return Scored(0.0, "the answer is empty, so it contradicts nothing")
    judged = verdicts(
        judge,
        expected,
        rubric=HALLUCINATION_RUBRIC,
        purpose="hallucination verdicts",
        answer=sample.answer,
        item_tag="expected_context",
        container="expected_contexts",
    )
    contradicted = [i for i, v in enumerate(judged, start=1) if not v.verdict]
    if not contradicted:
        return Scored(0.0, f"the answer contradicts none of the {len(expected)} expected contexts")
    first = contradicted[0]
    return Scored(
        len(contradicted) / len(expected),
        f"the answer contradicts {len(contradicted)} of {len(expected)} expected contexts; "
        f"first: context {first} {_q(expected[first - 1])}{_because(judged[first - 1])}",
    )


class Factuality(CountedReply):
    #: per answer statement: supported by the expected answer (TP) or not (FP)
    answer_verdicts: list[Verdict]
    #: per expected-answer statement: covered by the answer or not (FN)
    expected_verdicts: list[Verdict]


def factuality(
    judge: Judge, question: str, answer_statements: list[str], expected_statements: list[str]
) -> Factuality:
    """TP / FP / FN classification of both statement lists in ONE call."""
    schema = counted(
        Factuality,
        answer_verdicts=len(answer_statements),
        expected_verdicts=len(expected_statements),
    )
    a, e = len(answer_statements), len(expected_statements)
    messages = prompts.build(
        "Compare an answer with the expected (reference) answer to the question inside "
        "<question>, statement by statement. For each statement inside <answer_statements>, "
        "verdict true when the expected statements state it or it follows directly from them, "
        "false otherwise. For each statement inside <expected_statements>, verdict true when "
        "the answer statements state it or it follows directly from them, false when the "
        "answer leaves it out or gets it wrong.",
        [
            *evidence_blocks(question=question),
            prompts.tagged_list("answer_statements", "answer_statement", answer_statements),
            prompts.tagged_list("expected_statements", "expected_statement", expected_statements),
        ],
        'Reply as {"answer_verdicts": [{"reason": "<one short sentence>", "verdict": true or '
        'false}, ...], "expected_verdicts": [...same form...]} with exactly '
        f"{a} answer_verdicts (entry i for answer_statement id i) and exactly {e} "
        "expected_verdicts (entry i for expected_statement id i).",
    )
    return ask(judge, messages, schema, purpose="answer correctness verdicts")


class CorrectnessParts(BaseModel):
    """The judge-derived components of Answer correctness, kept on its result so the Score
    step can recompute the score with an embedding similarity."""

    model_config = ConfigDict(extra="forbid")

    tp: int = Field(ge=0)
    fp: int = Field(ge=0)
    fn: int = Field(ge=0)
    #: The reason's tail: the first wrong and the first missing statement.
    notes: str = ""


def correctness_parts(judge: Judge, sample: Sample) -> CorrectnessParts:
    """TP / FP / FN of the answer against the expected answer (the judge's part)."""
    assert sample.answer is not None and sample.expected_answer is not None
    expected = statements(judge, sample.expected_answer)
    if not expected:
        raise SkipCase(NO_EA_STATEMENTS)
    answered = statements(judge, sample.answer)
    if not answered:
        return CorrectnessParts(
            tp=0, fp=0, fn=len(expected), notes="; the answer makes no statements"
        )
    reply = factuality(judge, sample.question, answered, expected)
    tp = sum(v.verdict for v in reply.answer_verdicts)
    wrong = [s for s, v in zip(answered, reply.answer_verdicts, strict=True) if not v.verdict]
    left_out = [s for s, v in zip(expected, reply.expected_verdicts, strict=True) if not v.verdict]
    notes = ""
    if wrong:
        notes += f"; first answer statement not in the expected answer: {_q(wrong[0])}"
    if left_out:
        notes += f"; first expected statement missing: {_q(left_out[0])}"
    return CorrectnessParts(tp=tp, fp=len(answered) - tp, fn=len(left_out), notes=notes)


def correctness_score(
    sample: Sample, parts: CorrectnessParts, similarity: Similarity, note: str
) -> Scored:
    """0.75 · factuality F1 + 0.25 · similarity(AA, EA): the one definition, used per case
    (with the stand-in) and by the Score step (with embeddings)."""
    assert sample.answer is not None and sample.expected_answer is not None
    f1 = factuality_f1(parts.tp, parts.fp, parts.fn)
    sim = similarity(sample.answer, sample.expected_answer)
    return Scored(
        0.75 * f1 + 0.25 * sim,
        f"0.75 · factuality F1 {f1:.3f} (TP {parts.tp}, FP {parts.fp}, FN {parts.fn}) + "
        f"0.25 · similarity {sim:.3f} ({note}){parts.notes}",
        parts=parts.model_dump(),
    )


def answer_correctness(
    judge: Judge,
    sample: Sample,
    similarity: Similarity = lexical_similarity,
    note: str = PENDING_NOTE,
) -> Scored:
    return correctness_score(sample, correctness_parts(judge, sample), similarity, note)


_COMPONENTS: tuple[tuple[str, Callable[[Judge, Sample], Scored]], ...] = (
    ("faithfulness", faithfulness),
    ("answer relevancy", answer_relevancy),
    ("contextual precision", contextual_precision),
    ("contextual recall", contextual_recall),
)


def ragas_composite(judge: Judge, sample: Sample) -> Scored:
    parts = [(name, fn(judge, sample)) for name, fn in _COMPONENTS]
    value = harmonic_mean([s.value for _, s in parts])
    listed = ", ".join(f"{name} {s.value:.3f}" for name, s in parts)
    lowest_name, lowest = min(parts, key=lambda p: p[1].value)
    reason = f"harmonic mean of {listed}"
    if lowest.value < 1:
        reason += f"; lowest: {lowest_name} ({lowest.reason})"
    return Scored(value, reason)
