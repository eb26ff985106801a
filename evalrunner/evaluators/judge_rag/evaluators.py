"""The registered judge RAG evaluators, one class per metric, in catalog order."""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from evalrunner.evaluators.base import (
    Input,
    MetricSpec,
    OptionsT,
    Sample,
    Scored,
)
from evalrunner.evaluators.judge_base import JudgeEvaluator
from evalrunner.evaluators.judge_rag.answers import (
    CorrectnessParts,
    answer_correctness,
    correctness_score,
    hallucination,
    ragas_composite,
)
from evalrunner.evaluators.judge_rag.rag import (
    NotInContext,
    QuestionParts,
    answer_relevancy,
    answer_relevancy_qg,
    contextual_precision,
    contextual_recall,
    contextual_relevancy,
    faithfulness,
    relevancy_qg_score,
)
from evalrunner.evaluators.judge_rag.shared import Similarity
from evalrunner.evaluators.judge_rag.similarity import EmbeddingSimilarityPart
from evalrunner.evaluators.registry import register
from evalrunner.judge.base import Judge

# --- evaluators --------------------------------------------------------------------------------


class _JudgeMetric(JudgeEvaluator[OptionsT]):
    """One metric computed with the run's judge by one of the functions of :mod:`.rag` and
    :mod:`.answers`."""

    def score(self, sample: Sample) -> Mapping[str, Scored]:
        assert self.judge is not None  # evaluate() skips when no judge is configured
        return {self.metrics[0].name: self.measure(self.judge, sample)}

    @abstractmethod
    def measure(self, judge: Judge, sample: Sample) -> Scored: ...


class FaithfulnessOptions(BaseModel):
    """Run-wide settings of Faithfulness (``evaluator_options``)."""

    model_config = ConfigDict(extra="forbid")

    not_in_context: NotInContext = Field(
        default="unfaithful",
        description="how a claim the retrieved context neither supports nor contradicts "
        "counts: 'unfaithful' (default, as Ragas counts it) or 'faithful' (as DeepEval "
        "does: only a contradicted claim is unfaithful; one more judge call per case with "
        "unsupported claims)",
    )


@register
class Faithfulness(_JudgeMetric[FaithfulnessOptions]):
    """Of the claims the answer makes, the share the retrieved context supports. The judge
    splits the answer into statements (one call, shared with Answer Relevancy) and checks
    each against the context; the reason quotes the first unsupported claim. Here a
    :class:`~evalrunner.judge.scripted.ScriptedJudge` gives the replies a model would write:

    >>> from evalrunner.judge.scripted import ScriptedJudge
    >>> judge = ScriptedJudge({
    ...     "statements": {"statements": ["Shakespeare wrote Hamlet.", "Hamlet dates from 1601."]},
    ...     "answer statement checks": {"checks": [
    ...         {"reason": "the context names him", "supported": True, "relevant": True},
    ...         {"reason": "the context gives no date", "supported": False, "relevant": True},
    ...     ]},
    ... })
    >>> sample = Sample(question="Who wrote Hamlet?", answer="Shakespeare wrote Hamlet in 1601.",
    ...                 contexts=["Hamlet is a tragedy by William Shakespeare."])
    >>> for r in Faithfulness(judge=judge).evaluate(sample):
    ...     print(f"{r.metric}: {r.score:.2f} {r.reason}")
    Faithfulness: 0.50 1 of 2 claims supported by the retrieved context; first unsupported:
        "Hamlet dates from 1601." (the context gives no date)

    DeepEval counts a claim the context is silent about as faithful; the option
    ``not_in_context: "faithful"`` does too, asking the judge which unsupported claims the
    context contradicts (one more call):

    >>> judge = ScriptedJudge({**judge.replies, "faithfulness contradictions": {"verdicts": [
    ...     {"reason": "the context is silent on the date", "verdict": False}]}})
    >>> deepeval = Faithfulness(options={"not_in_context": "faithful"}, judge=judge)
    >>> for r in deepeval.evaluate(sample):
    ...     print(f"{r.metric}: {r.score:.2f} {r.reason}")
    Faithfulness: 1.00 2 of 2 claims faithful (1 the retrieved context neither supports nor
        contradicts, counted as faithful)
    """

    name = "Faithfulness"
    description = "Share of the answer's claims supported by the retrieved context (judge)."
    inputs = frozenset({Input.ANSWER, Input.CONTEXTS})
    metrics = (MetricSpec("Faithfulness", "supported claims / claims", primary=True),)

    def measure(self, judge: Judge, sample: Sample) -> Scored:
        return faithfulness(judge, sample, not_in_context=self.options.not_in_context)


@register
class AnswerRelevancy(_JudgeMetric):
    """Of the statements the answer makes, the share relevant to the question. With retrieved
    context, the verdicts come from the same judge call as Faithfulness's (a cache hit when
    both run); here a :class:`~evalrunner.judge.scripted.ScriptedJudge` gives the replies:

    >>> from evalrunner.judge.scripted import ScriptedJudge
    >>> judge = ScriptedJudge({
    ...     "statements": {"statements": ["Shakespeare wrote Hamlet.", "Hamlet dates from 1601."]},
    ...     "answer statement checks": {"checks": [
    ...         {"reason": "answers who", "supported": True, "relevant": True},
    ...         {"reason": "the date was not asked", "supported": False, "relevant": False},
    ...     ]},
    ... })
    >>> sample = Sample(question="Who wrote Hamlet?", answer="Shakespeare wrote Hamlet in 1601.",
    ...                 contexts=["Hamlet is a tragedy by William Shakespeare."])
    >>> for r in AnswerRelevancy(judge=judge).evaluate(sample):
    ...     print(f"{r.metric}: {r.score:.2f} {r.reason}")
    Answer Relevancy: 0.50 1 of 2 statements relevant to the question; first irrelevant:
        "Hamlet dates from 1601." (the date was not asked)
    """

    name = "Answer Relevancy"
    description = "Share of the answer's statements relevant to the question (judge)."
    inputs = frozenset({Input.QUESTION, Input.ANSWER})
    metrics = (MetricSpec("Answer Relevancy", "relevant statements / statements", primary=True),)

    def measure(self, judge: Judge, sample: Sample) -> Scored:
        return answer_relevancy(judge, sample)


@register
class AnswerRelevancyQuestionGeneration(_JudgeMetric, EmbeddingSimilarityPart):
    """Ragas' answer relevancy: the judge writes the questions the answer answers, and the score
    is how similar they are to the question asked (embeddings in the Score step; the lexical
    stand-in below when no embedding model is available).

    >>> from evalrunner.evaluators.judge_rag.rag import QuestionParts, relevancy_qg_score
    >>> from evalrunner.evaluators.judge_rag.shared import lexical_similarity
    >>> sample = Sample(question="Who wrote Hamlet?", answer="Shakespeare wrote Hamlet in 1601.")
    >>> parts = QuestionParts(questions=["Who wrote Hamlet?", "When was Hamlet written?"])
    >>> scored = relevancy_qg_score(sample, parts, lexical_similarity, "lexical stand-in")
    >>> print(f"{scored.value:.3f} - {scored.reason}")
    0.750 - mean similarity 0.750 of the question to 2 questions the answer answers (lexical
        stand-in); least similar (0.500): "When was Hamlet written?"
    """

    name = "Answer relevancy (question generation)"
    description = (
        "Ragas-style: mean similarity of the question to 3 questions the judge writes from "
        "the answer; 0 for a noncommittal answer. Similarity: embeddings in the Score step, "
        "ROUGE-L where the run has no embedding model."
    )
    inputs = frozenset({Input.QUESTION, Input.ANSWER})
    metrics = (
        MetricSpec(
            "Answer relevancy (question generation)",
            "mean similarity of the question to generated questions (embeddings when the "
            "run has an embedding model, ROUGE-L otherwise)",
            threshold=0.5,
            primary=True,
        ),
    )

    def measure(self, judge: Judge, sample: Sample) -> Scored:
        return answer_relevancy_qg(judge, sample)

    def texts(self, sample: Sample, parts: Mapping[str, Any]) -> list[str]:
        return [sample.question, *QuestionParts.model_validate(parts).questions]

    def rescore(
        self, sample: Sample, parts: Mapping[str, Any], similarity: Similarity, note: str
    ) -> Scored:
        return relevancy_qg_score(sample, QuestionParts.model_validate(parts), similarity, note)


@register
class ContextualPrecision(_JudgeMetric):
    """Whether the chunks that matter are ranked first (DeepEval's contextual precision): the
    judge says which chunks are relevant, and this rank-weighted precision scores the order,
    so the same chunks ranked better score higher.

    >>> from evalrunner.evaluators.judge_rag.shared import weighted_precision
    >>> round(weighted_precision([True, False, True]), 3)  # relevant chunks at ranks 1 and 3
    0.833
    >>> round(weighted_precision([False, True, True]), 3)  # the same two, ranked lower
    0.583
    """

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
    """Of the expected answer's statements, the share the retrieved context could have
    supplied: low recall means the retriever missed what a correct answer needs. One judge
    call splits the expected answer and attributes each statement (a
    :class:`~evalrunner.judge.scripted.ScriptedJudge` here):

    >>> from evalrunner.judge.scripted import ScriptedJudge
    >>> judge = ScriptedJudge({"contextual recall statements": {"statements": [
    ...     {"statement": "Shakespeare wrote Hamlet.", "reason": "chunk 1", "verdict": True},
    ...     {"statement": "He wrote it around 1600.", "reason": "no date", "verdict": False},
    ... ]}})
    >>> sample = Sample(question="Who wrote Hamlet, and when?",
    ...                 expected_answer="Shakespeare wrote Hamlet around 1600.",
    ...                 contexts=["Hamlet is a tragedy by William Shakespeare."])
    >>> for r in ContextualRecall(judge=judge).evaluate(sample):
    ...     print(f"{r.metric}: {r.score:.2f} {r.reason}")
    Contextual Recall: 0.50 1 of 2 expected-answer statements attributable to the retrieved
        context; first missing: "He wrote it around 1600." (no date)
    """

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
    """Of the statements in the retrieved chunks, the share relevant to the question: low
    relevancy means the retriever brings noise. One judge call splits every chunk and judges
    each statement (a :class:`~evalrunner.judge.scripted.ScriptedJudge` here):

    >>> from evalrunner.judge.scripted import ScriptedJudge
    >>> judge = ScriptedJudge({"contextual relevancy statements": {"texts": [
    ...     {"statements": [{"statement": "Hamlet is by Shakespeare.", "verdict": True}]},
    ...     {"statements": [{"statement": "Elsinore is in Denmark.", "verdict": False}]},
    ... ]}})
    >>> sample = Sample(question="Who wrote Hamlet?", contexts=[
    ...     "Hamlet is by Shakespeare.", "Elsinore is in Denmark."])
    >>> for r in ContextualRelevancy(judge=judge).evaluate(sample):
    ...     print(f"{r.metric}: {r.score:.2f} {r.reason}")
    Contextual Relevancy: 0.50 1 of 2 context statements relevant to the question; chunks with
        nothing relevant: 2; first irrelevant: "Elsinore is in Denmark."
    """

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
    """Of the expected contexts (the facts the answer must not contradict), the share the
    answer contradicts; lower is better. One judge call gives a verdict per context (a
    :class:`~evalrunner.judge.scripted.ScriptedJudge` here):

    >>> from evalrunner.judge.scripted import ScriptedJudge
    >>> judge = ScriptedJudge({"hallucination verdicts": {"verdicts": [
    ...     {"reason": "it names Marlowe, not Shakespeare", "verdict": False},
    ...     {"reason": "it says nothing of the setting", "verdict": True},
    ... ]}})
    >>> sample = Sample(question="Who wrote Hamlet?", answer="Marlowe wrote Hamlet.",
    ...                 expected_contexts=["Hamlet is by Shakespeare.", "It is set in Denmark."])
    >>> for r in HallucinationJudge(judge=judge).evaluate(sample):
    ...     print(f"{r.metric}: {r.score:.2f} {r.success} {r.reason}")
    Hallucination (judge): 0.50 True the answer contradicts 1 of 2 expected contexts; first:
        context 1 "Hamlet is by Shakespeare." (it names Marlowe, not Shakespeare)
    """

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
class AnswerCorrectness(_JudgeMetric, EmbeddingSimilarityPart):
    """Ragas' answer correctness: the judge counts the answer's statements that the expected
    answer backs (TP), those it does not (FP) and the expected ones left out (FN); the score
    weighs their F1 with a similarity, here the lexical stand-in used when no embedding model
    is available.

    >>> from evalrunner.evaluators.judge_rag.answers import CorrectnessParts, correctness_score
    >>> from evalrunner.evaluators.judge_rag.shared import lexical_similarity
    >>> sample = Sample(question="Who wrote Hamlet?", answer="Shakespeare wrote Hamlet in 1601.",
    ...                 expected_answer="William Shakespeare wrote Hamlet.")
    >>> parts = CorrectnessParts(tp=1, fp=1, fn=0)  # what the judge's verdicts add up to
    >>> scored = correctness_score(sample, parts, lexical_similarity, "lexical stand-in")
    >>> print(f"{scored.value:.3f} - {scored.reason}")
    0.688 - 0.75 · factuality F1 0.667 (TP 1, FP 1, FN 0) + 0.25 · similarity 0.750 (lexical
        stand-in)
    """

    name = "Answer correctness"
    description = "0.75 · factuality F1 against the expected answer + 0.25 · similarity."
    inputs = frozenset({Input.ANSWER, Input.EXPECTED_ANSWER})
    metrics = (
        MetricSpec("Answer correctness", "0.75 · factuality F1 + 0.25 · similarity", primary=True),
    )

    def measure(self, judge: Judge, sample: Sample) -> Scored:
        return answer_correctness(judge, sample)

    def texts(self, sample: Sample, parts: Mapping[str, Any]) -> list[str]:
        return [sample.answer or "", sample.expected_answer or ""]

    def rescore(
        self, sample: Sample, parts: Mapping[str, Any], similarity: Similarity, note: str
    ) -> Scored:
        return correctness_score(sample, CorrectnessParts.model_validate(parts), similarity, note)


@register
class RagasComposite(_JudgeMetric):
    """One number for a RAG answer, as Ragas reports it: the harmonic mean of Faithfulness,
    Answer Relevancy, Contextual Precision and Contextual Recall, so one weak part pulls the
    whole down (and a 0 anywhere makes it 0).

    >>> from evalrunner.evaluators.judge_rag.shared import harmonic_mean
    >>> round(harmonic_mean([1.0, 0.8, 0.5, 1.0]), 3)
    0.762
    >>> harmonic_mean([1.0, 0.8, 0.0, 1.0])
    0.0
    """

    name = "Ragas composite"
    aliases = ("Ragas score", "Ragas")
    description = (
        "Harmonic mean of Faithfulness, Answer Relevancy, Contextual Precision and Recall."
    )
    inputs = frozenset({Input.QUESTION, Input.ANSWER, Input.EXPECTED_ANSWER, Input.CONTEXTS})
    metrics = (MetricSpec("Ragas composite", "harmonic mean of four RAG metrics", primary=True),)

    def measure(self, judge: Judge, sample: Sample) -> Scored:
        return ragas_composite(judge, sample)
