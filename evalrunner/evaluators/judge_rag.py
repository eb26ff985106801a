"""LLM-judge RAG metrics: faithfulness, answer relevancy, contextual precision, recall and
relevancy, hallucination, answer correctness and the Ragas composite.

Definitions (Q question, EA expected answer, RC retrieved chunks, AA answer):

* ``Faithfulness`` = claims of AA supported by RC / claims. An answer with no claims has
  nothing unsupported and scores 1 (said in the reason).
* ``Answer Relevancy`` = statements of AA relevant to Q / statements; no statements → 0.
* ``Answer relevancy (question generation)`` (Ragas style) — the judge writes N = 3 questions
  that AA answers, from AA alone, and says whether AA is noncommittal ("I don't know"):
  score = 0 if noncommittal, else the mean similarity of Q to the generated questions.
  EVALUATORS.md specifies cosine similarity of embeddings; this release has no embedding
  model offline, so the similarity is :func:`lexical_similarity` (ROUGE-L F1 over stemmed
  content words) until the embeddings of issue #4 replace it (``similarity`` is a class
  attribute for that). Lexical similarity of a faithful paraphrase is lower than its cosine
  similarity, hence a default threshold of 0.5 instead of 0.75; every reason names the
  stand-in.
* ``Contextual Precision`` — the judge marks each chunk relevant (r_k = 1) for Q given EA;
  score = (1 / #relevant) · Σ_k (relevant up to k / k) · r_k; no relevant chunk → 0.
  Blank chunks are irrelevant without asking.
* ``Contextual Recall`` = statements of EA attributable to RC / statements.
* ``Contextual Relevancy`` = statements of the chunks relevant to Q / statements. The chunk
  statements serve no other metric, so they are extracted and judged in the same call.
* ``Hallucination (judge)`` = expected contexts that AA contradicts / expected contexts;
  lower is better, threshold 0.5. (Named apart from the cross-encoder ``Hallucination``.)
* ``Answer correctness`` = 0.75 · factuality F1 + 0.25 · similarity(AA, EA). Factuality: one
  call classifies each AA statement as supported by EA (TP) or not (FP) and each EA statement
  as covered by AA or not (FN); F1 = TP / (TP + 0.5 · (FP + FN)). Similarity: the same
  lexical stand-in as above, until issue #4's answer semantic similarity.
* ``Ragas composite`` = harmonic mean of Faithfulness, Answer Relevancy (statement based),
  Contextual Precision and Contextual Recall, computed by the same functions with the same
  prompts, so next to those metrics it costs no judge call (the cache answers).

Calls for one case, all five RAG metrics, cache on: 5. The statements of AA (one call); ONE
call that judges each AA statement twice, ``supported`` by RC (Faithfulness reads it) and
``relevant`` to Q (Answer Relevancy reads it), with the identical prompt from both metrics, so
the second is a cache hit; one verdict call for Contextual Precision; one extract-and-judge call
each for Contextual Recall (the statements of EA) and Contextual Relevancy (those of RC). Alone,
Faithfulness and Answer Relevancy cost 2 calls each. A case without retrieved context (or with
blank chunks only) skips Faithfulness; Answer Relevancy then asks a relevance-only verdict call
(no support question, no context) instead of the shared one.

Blank retrieved chunks are dropped (Contextual Precision keeps their rank); a case whose
chunks are all blank is skipped like a case without retrieved context.
"""

from __future__ import annotations

import re
import statistics
from abc import abstractmethod
from collections.abc import Callable, Mapping, Sequence
from functools import lru_cache
from typing import ClassVar

from nltk.stem.porter import PorterStemmer

from evalrunner.evaluators.base import (
    Evaluator,
    Input,
    MetricSpec,
    Requirement,
    Sample,
    Scored,
    SkipCase,
)
from evalrunner.evaluators.registry import register
from evalrunner.judge import prompts
from evalrunner.judge.base import Judge
from evalrunner.judge.extract import (
    CountedReply,
    StatementCheck,
    Verdict,
    ask,
    counted,
    evidence_blocks,
    judged_statements,
    judged_text,
    statement_checks,
    statements,
    verdicts,
)
from evalrunner.judge.extract import claims as extract_claims

#: Where this module's evaluators come in the catalog (see evaluators.registry).
CATALOG_POSITION = 110

BLANK_CONTEXT = "the retrieved context chunks are all blank"
NO_EA_STATEMENTS = "no statements could be extracted from the expected answer"
N_QUESTIONS = 3
_QUOTE = 160


def _q(text: str) -> str:
    """A statement or reason quoted in a reason, shortened."""
    text = " ".join(text.split())
    return '"' + (text if len(text) <= _QUOTE else text[: _QUOTE - 1] + "…") + '"'


def _because_text(reason: str) -> str:
    return f" ({reason.strip()})" if reason.strip() else ""


def _because(v: Verdict | StatementCheck) -> str:
    return _because_text(v.reason)


def _chunks(sample: Sample) -> list[str]:
    chunks = [c for c in sample.contexts if c.strip()]
    if not chunks:
        raise SkipCase(BLANK_CONTEXT)
    return chunks


# --- formulas ----------------------------------------------------------------------------------


def weighted_precision(relevance: Sequence[bool]) -> float:
    """(1 / #relevant) · Σ_k (relevant up to k / k) · r_k; 0 when nothing is relevant."""
    hits, total = 0, 0.0
    for k, relevant in enumerate(relevance, start=1):
        if relevant:
            hits += 1
            total += hits / k
    return total / hits if hits else 0.0


def factuality_f1(tp: int, fp: int, fn: int) -> float:
    """TP / (TP + 0.5 · (FP + FN)); 0 when there is nothing at all."""
    denominator = tp + 0.5 * (fp + fn)
    return tp / denominator if denominator else 0.0


def harmonic_mean(values: Sequence[float]) -> float:
    """Harmonic mean; 0 as soon as one value is 0."""
    return 0.0 if any(v <= 0 for v in values) else statistics.harmonic_mean(values)


_WORD = re.compile(r"\w+", re.UNICODE)
_STOPWORDS = frozenset(
    "a an the is are was were be been being am do does did done has have had of in on at to "
    "for from by with about as into and or but if then than so that this these those it its "
    "what which who whom whose when where why how can could should would will shall may might "
    "must i you he she we they me him her us them my your his our their there here please "
    "tell me".split()
)
_STEM = PorterStemmer()


@lru_cache(maxsize=4096)
def _content_tokens(text: str) -> tuple[str, ...]:
    words = _WORD.findall(text.casefold())
    content = [w for w in words if w not in _STOPWORDS] or words
    return tuple(_STEM.stem(w) for w in content)


def lexical_similarity(a: str, b: str) -> float:
    """ROUGE-L F1 over stemmed content words (stopwords dropped unless nothing else is left):
    the offline stand-in for embedding cosine similarity until issue #4."""
    x, y = _content_tokens(a), _content_tokens(b)
    if not x or not y:
        return 0.0
    previous = [0] * (len(y) + 1)
    for token in x:
        current = [0]
        for j, other in enumerate(y, start=1):
            current.append(
                previous[j - 1] + 1 if token == other else max(previous[j], current[j - 1])
            )
        previous = current
    lcs = previous[-1]
    if lcs == 0:
        return 0.0
    precision, recall = lcs / len(x), lcs / len(y)
    return 2 * precision * recall / (precision + recall)


SIMILARITY_NOTE = "ROUGE-L F1 of content words, a lexical stand-in for embedding similarity"


# --- rubrics (what verdict: true means) ---------------------------------------------------------

ANSWER_CHECKS_RUBRIC = (
    "The statements in <statements> come from an answer to the question in <question>. For "
    "each: supported is true when the retrieved <context> states it or it follows directly "
    "from it, false when the context contradicts it or lacks it (use only the context, not "
    "your own knowledge); relevant is true when it addresses the question or helps to answer "
    "it (a pertinent caveat counts), false when off-topic or filler."
)
ANSWER_RELEVANCY_RUBRIC = (
    "The statements in <statements> come from an answer to the question in <question>. For "
    "each, verdict true when it addresses the question or helps to answer it (a pertinent "
    "caveat counts), false when off-topic or filler."
)
CONTEXTUAL_PRECISION_RUBRIC = (
    "The chunks in <context> were retrieved, in this order, for the question in <question>; "
    "the expected answer is in <expected_answer>. For each chunk, verdict true when it helps "
    "to arrive at the expected answer, false otherwise."
)
CONTEXTUAL_RECALL_RUBRIC = (
    "Verdict true when a chunk in <context> states the statement or it follows directly from "
    "one, false otherwise; use only the context, not your own knowledge."
)
CONTEXTUAL_RELEVANCY_RUBRIC = (
    "Verdict true when it is relevant to the question in <question> (helps to answer it), "
    "false otherwise."
)
HALLUCINATION_RUBRIC = (
    "The texts inside <expected_contexts> are trusted reference facts for the answer inside "
    "<answer>. For each expected context, decide whether the answer is consistent with it: "
    "verdict true when the answer agrees with it or does not address it; false when the "
    "answer states something that contradicts it."
)


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


def faithfulness(judge: Judge, sample: Sample) -> Scored:
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
    claim, check = failed[0]
    return Scored(
        supported / len(found),
        f"{supported} of {len(found)} claims supported by the retrieved context; first "
        f"unsupported: {_q(claim)}{_because(check)}",
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


def answer_relevancy_qg(
    judge: Judge, sample: Sample, similarity: Callable[[str, str], float] = lexical_similarity
) -> Scored:
    assert sample.answer is not None
    if not sample.answer.strip():
        return Scored(0.0, "the answer is empty")
    reply = generated_questions(judge, sample.answer)
    if reply.noncommittal:
        return Scored(0.0, "the answer is noncommittal (evasive or declines to answer)")
    scores = [similarity(sample.question, q) for q in reply.questions]
    value = sum(scores) / len(scores)
    worst = min(range(len(scores)), key=scores.__getitem__)
    return Scored(
        value,
        f"mean similarity {value:.3f} of the question to {len(scores)} questions the answer "
        f"answers ({SIMILARITY_NOTE}); least similar ({scores[worst]:.3f}): "
        f"{_q(reply.questions[worst])}",
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


def answer_correctness(
    judge: Judge, sample: Sample, similarity: Callable[[str, str], float] = lexical_similarity
) -> Scored:
    assert sample.answer is not None and sample.expected_answer is not None
    expected = statements(judge, sample.expected_answer)
    if not expected:
        raise SkipCase(NO_EA_STATEMENTS)
    answered = statements(judge, sample.answer)
    missing_note = ""
    if answered:
        reply = factuality(judge, sample.question, answered, expected)
        tp = sum(v.verdict for v in reply.answer_verdicts)
        fp = len(answered) - tp
        fn = sum(not v.verdict for v in reply.expected_verdicts)
        wrong = [s for s, v in zip(answered, reply.answer_verdicts, strict=True) if not v.verdict]
        left_out = [
            s for s, v in zip(expected, reply.expected_verdicts, strict=True) if not v.verdict
        ]
        if wrong:
            missing_note += f"; first answer statement not in the expected answer: {_q(wrong[0])}"
        if left_out:
            missing_note += f"; first expected statement missing: {_q(left_out[0])}"
    else:
        tp, fp, fn = 0, 0, len(expected)
        missing_note = "; the answer makes no statements"
    f1 = factuality_f1(tp, fp, fn)
    sim = similarity(sample.answer, sample.expected_answer)
    value = 0.75 * f1 + 0.25 * sim
    return Scored(
        value,
        f"0.75 · factuality F1 {f1:.3f} (TP {tp}, FP {fp}, FN {fn}) + 0.25 · similarity "
        f"{sim:.3f} ({SIMILARITY_NOTE}){missing_note}",
    )


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


# --- evaluators --------------------------------------------------------------------------------


class _JudgeMetric(Evaluator):
    """One metric computed by one of the functions above with the run's judge."""

    requires: ClassVar[Requirement] = Requirement.JUDGE

    def score(self, sample: Sample) -> Mapping[str, Scored]:
        assert self.judge is not None  # evaluate() skips when no judge is configured
        return {self.metrics[0].name: self.measure(self.judge, sample)}

    @abstractmethod
    def measure(self, judge: Judge, sample: Sample) -> Scored: ...


@register
class Faithfulness(_JudgeMetric):
    name = "Faithfulness"
    description = "Share of the answer's claims supported by the retrieved context (judge)."
    inputs = frozenset({Input.ANSWER, Input.CONTEXTS})
    metrics = (MetricSpec("Faithfulness", "supported claims / claims", primary=True),)

    def measure(self, judge: Judge, sample: Sample) -> Scored:
        return faithfulness(judge, sample)


@register
class AnswerRelevancy(_JudgeMetric):
    name = "Answer Relevancy"
    description = "Share of the answer's statements relevant to the question (judge)."
    inputs = frozenset({Input.QUESTION, Input.ANSWER})
    metrics = (MetricSpec("Answer Relevancy", "relevant statements / statements", primary=True),)

    def measure(self, judge: Judge, sample: Sample) -> Scored:
        return answer_relevancy(judge, sample)


@register
class AnswerRelevancyQuestionGeneration(_JudgeMetric):
    name = "Answer relevancy (question generation)"
    description = (
        "Ragas-style: mean similarity of the question to 3 questions the judge writes from "
        "the answer; 0 for a noncommittal answer. Similarity is lexical until embeddings land."
    )
    inputs = frozenset({Input.QUESTION, Input.ANSWER})
    metrics = (
        MetricSpec(
            "Answer relevancy (question generation)",
            "mean similarity of the question to generated questions (lexical stand-in)",
            threshold=0.5,
            primary=True,
        ),
    )
    #: Replaced by embedding cosine similarity when issue #4 lands.
    similarity: ClassVar[Callable[[str, str], float]] = staticmethod(lexical_similarity)

    def measure(self, judge: Judge, sample: Sample) -> Scored:
        return answer_relevancy_qg(judge, sample, type(self).similarity)


@register
class ContextualPrecision(_JudgeMetric):
    name = "Contextual Precision"
    aliases = ("Context precision",)
    description = "Rank-weighted precision of the retrieved chunks relevant to the question."
    inputs = frozenset({Input.QUESTION, Input.EXPECTED_ANSWER, Input.CONTEXTS})
    metrics = (
        MetricSpec("Contextual Precision", "rank-weighted share of relevant chunks", primary=True),
    )

    def measure(self, judge: Judge, sample: Sample) -> Scored:
        return contextual_precision(judge, sample)


@register
class ContextualRecall(_JudgeMetric):
    name = "Contextual Recall"
    aliases = ("Context recall",)
    description = "Share of the expected answer's statements attributable to the context."
    inputs = frozenset({Input.EXPECTED_ANSWER, Input.CONTEXTS})
    metrics = (
        MetricSpec("Contextual Recall", "attributable statements / statements", primary=True),
    )

    def measure(self, judge: Judge, sample: Sample) -> Scored:
        return contextual_recall(judge, sample)


@register
class ContextualRelevancy(_JudgeMetric):
    name = "Contextual Relevancy"
    description = "Share of the retrieved context's statements relevant to the question."
    inputs = frozenset({Input.QUESTION, Input.CONTEXTS})
    metrics = (
        MetricSpec("Contextual Relevancy", "relevant statements / statements", primary=True),
    )

    def measure(self, judge: Judge, sample: Sample) -> Scored:
        return contextual_relevancy(judge, sample)


@register
class HallucinationJudge(_JudgeMetric):
    name = "Hallucination (judge)"
    description = "Share of the expected contexts the answer contradicts (judge); lower is better."
    inputs = frozenset({Input.ANSWER, Input.EXPECTED_CONTEXTS})
    metrics = (
        MetricSpec(
            "Hallucination (judge)",
            "contradicted expected contexts / expected contexts",
            higher_is_better=False,
            threshold=0.5,
            primary=True,
        ),
    )

    def measure(self, judge: Judge, sample: Sample) -> Scored:
        return hallucination(judge, sample)


@register
class AnswerCorrectness(_JudgeMetric):
    name = "Answer correctness"
    description = "0.75 · factuality F1 against the expected answer + 0.25 · similarity."
    inputs = frozenset({Input.ANSWER, Input.EXPECTED_ANSWER})
    metrics = (
        MetricSpec("Answer correctness", "0.75 · factuality F1 + 0.25 · similarity", primary=True),
    )
    #: Replaced by answer semantic similarity (embeddings) when issue #4 lands.
    similarity: ClassVar[Callable[[str, str], float]] = staticmethod(lexical_similarity)

    def measure(self, judge: Judge, sample: Sample) -> Scored:
        return answer_correctness(judge, sample, type(self).similarity)


@register
class RagasComposite(_JudgeMetric):
    name = "Ragas composite"
    aliases = ("Ragas score",)
    description = (
        "Harmonic mean of Faithfulness, Answer Relevancy, Contextual Precision and Recall."
    )
    inputs = frozenset({Input.QUESTION, Input.ANSWER, Input.EXPECTED_ANSWER, Input.CONTEXTS})
    metrics = (MetricSpec("Ragas composite", "harmonic mean of four RAG metrics", primary=True),)

    def measure(self, judge: Judge, sample: Sample) -> Scored:
        return ragas_composite(judge, sample)


__all__ = [
    "AnswerCorrectness",
    "AnswerRelevancy",
    "AnswerRelevancyQuestionGeneration",
    "ContextualPrecision",
    "ContextualRecall",
    "ContextualRelevancy",
    "Faithfulness",
    "HallucinationJudge",
    "RagasComposite",
    "answer_correctness",
    "answer_relevancy",
    "answer_relevancy_qg",
    "contextual_precision",
    "contextual_recall",
    "contextual_relevancy",
    "factuality_f1",
    "faithfulness",
    "hallucination",
    "harmonic_mean",
    "lexical_similarity",
    "ragas_composite",
    "weighted_precision",
]
