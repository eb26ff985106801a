"""Embedding metrics: similarity, relevancy and groundedness from one bi-encoder.

All six evaluators here use the run's embedding model (the packaged all-MiniLM-L6-v2 on a
laptop, bge-small-en-v1.5 in the GPU image) through one shared :class:`TextEncoder`, so an
answer sentence that Groundedness, Answer relevancy and sentence similarity all need is
encoded once per run. Each evaluator first lists every text its batch needs and encodes them
in one length-sorted pass, then computes its formula (EVALUATORS.md) from unit vectors: a dot
product is the cosine similarity S(a, b).

Cosine similarities can be slightly negative for unrelated texts; scores are clipped to
[0, 1] so every metric here shares the scale of the rest of the report.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from typing import ClassVar

import numpy as np
from pydantic import Field

from evalrunner.evaluators.base import Input, MetricSpec, Sample, Scored, SkipCase
from evalrunner.evaluators.model_base import ModelEvaluator, ModelOptions, ModelOptionsT
from evalrunner.evaluators.registry import register
from evalrunner.evaluators.sentences import split_sentences
from evalrunner.models import ModelRole
from evalrunner.models.scorers import TextEncoder

#: Where this module's evaluators come in the catalog (see evaluators.registry).
CATALOG_POSITION = 140

EMPTY_ANSWER = "the answer is empty"


def _clip(value: float) -> float:
    return float(min(1.0, max(0.0, value)))


def cosine_similarity(encoder: TextEncoder, a: str, b: str) -> float:
    """S(a, b): the cosine similarity of two texts' unit embeddings, clipped to [0, 1]; 0 when
    either is blank (a blank text has no meaning to compare). The one definition that Answer
    semantic similarity and the judge metrics' similarity parts share."""
    if not a.strip() or not b.strip():
        return 0.0
    x, y = encoder.embed([a, b])
    return _clip(float(x @ y))


def _quote(text: str, limit: int = 80) -> str:
    text = " ".join(text.split())
    return f"'{text[: limit - 1]}…'" if len(text) > limit else f"'{text}'"


def _chunk_sentences(chunks: Sequence[str]) -> list[list[str]]:
    """Sentences per chunk; a chunk the splitter finds no sentence in counts as one."""
    return [split_sentences(c) or ([c.strip()] if c.strip() else []) for c in chunks]


class EmbeddingEvaluator(ModelEvaluator[ModelOptionsT]):
    """Lists the texts each sample needs, encodes them all at once, then scores each sample
    from the cached embeddings; a failure on one sample is that sample's error only."""

    role: ClassVar[ModelRole] = ModelRole.EMBEDDING

    def encoder(self) -> TextEncoder:
        return self.hub.encoder(self.model_name())

    @abstractmethod
    def texts(self, sample: Sample) -> list[str]:
        """Every text ``score_one`` will embed for ``sample``."""

    @abstractmethod
    def score_one(self, sample: Sample, encoder: TextEncoder) -> Mapping[str, Scored]:
        """Raw scores of one sample from embeddings already computed for the batch."""

    def score_batch(self, samples: Sequence[Sample]) -> list[Mapping[str, Scored] | Exception]:
        encoder = self.encoder()
        encoder.prefetch(t for s in samples for t in self.texts(s) if t)
        return [_guarded(partial(self.score_one, s, encoder)) for s in samples]


def _guarded(
    compute: Callable[[], Mapping[str, Scored]],
) -> Mapping[str, Scored] | Exception:
    try:
        return compute()
    except Exception as exc:  # SkipCase included: the base class tells them apart
        return exc


# --------------------------------------------------------------------------- answer vs expected


class SimilarityOptions(ModelOptions):
    cross_encoder: bool | str = Field(
        default=False,
        description="score with a cross-encoder instead of cosine similarity: true for the "
        "default STS cross-encoder, or its name/path",
    )


@register
class AnswerSemanticSimilarity(EmbeddingEvaluator[SimilarityOptions]):
    """How close in meaning the answer is to the expected answer: the cosine similarity of
    their embeddings (the packaged MiniLM by default, so it runs offline).

    >>> from evalrunner.models import ModelHub
    >>> hub = ModelHub(device="cpu")  # fp32 everywhere, so the digits hold on a GPU host too
    >>> sample = Sample(question="Who wrote Hamlet?", answer="Shakespeare wrote Hamlet.",
    ...                 expected_answer="Hamlet was written by William Shakespeare.")
    >>> for r in AnswerSemanticSimilarity(models=hub).evaluate(sample):
    ...     print(f"{r.metric}: {r.score:.2f} {r.reason}")
    Answer semantic similarity: 0.94 cosine similarity 0.94
        (sentence-transformers/all-MiniLM-L6-v2)
    """

    name = "Answer semantic similarity"
    aliases = ("Semantic similarity", "Answer similarity", "ada_similarity")
    description = (
        "Cosine similarity of the answer and the expected answer embeddings (bi-encoder), "
        "or an STS cross-encoder's score with the option cross_encoder."
    )
    inputs = frozenset({Input.ANSWER, Input.EXPECTED_ANSWER})
    metrics = (
        MetricSpec(
            "Answer semantic similarity",
            "how close the answer's meaning is to the expected answer",
            primary=True,
        ),
    )

    def texts(self, sample: Sample) -> list[str]:
        return [sample.answer or "", sample.expected_answer or ""]

    def score_one(self, sample: Sample, encoder: TextEncoder) -> Mapping[str, Scored]:
        if not (sample.answer or "").strip():
            return {self.name: Scored(0.0, EMPTY_ANSWER)}
        value = cosine_similarity(encoder, sample.answer or "", sample.expected_answer or "")
        return {self.name: Scored(value, f"cosine similarity {value:.2f} ({encoder.name})")}

    def models_used(self) -> list[str]:
        chosen = self.options.cross_encoder
        if not chosen:
            return super().models_used()
        return [
            chosen
            if isinstance(chosen, str)
            else self.hub.model_settings.default_model(ModelRole.CROSS_ENCODER)
        ]

    def score_batch(self, samples: Sequence[Sample]) -> list[Mapping[str, Scored] | Exception]:
        chosen = self.options.cross_encoder
        if not chosen:
            return super().score_batch(samples)
        name = (
            chosen
            if isinstance(chosen, str)
            else self.hub.model_settings.default_model(ModelRole.CROSS_ENCODER)
        )
        scorer = self.hub.cross_encoder(name, ModelRole.CROSS_ENCODER)
        pairs = [
            (s.answer or "", s.expected_answer or "") for s in samples if (s.answer or "").strip()
        ]
        scores = iter(scorer.scores(pairs)[:, -1])
        out: list[Mapping[str, Scored] | Exception] = []
        for s in samples:
            if not (s.answer or "").strip():
                out.append({self.name: Scored(0.0, EMPTY_ANSWER)})
                continue
            value = _clip(float(next(scores)))
            out.append({self.name: Scored(value, f"cross-encoder score {value:.2f} ({name})")})
        return out


@register
class AnswerSemanticSentenceSimilarity(EmbeddingEvaluator):
    """Sentence by sentence, how close the answer is to the expected answer: each answer
    sentence's best match among the expected answer's; the min names the sentence that
    strays furthest.

    >>> from evalrunner.models import ModelHub
    >>> hub = ModelHub(device="cpu")  # fp32 everywhere, so the digits hold on a GPU host too
    >>> sample = Sample(question="Who wrote Hamlet?",
    ...                 answer="Shakespeare wrote Hamlet. It is set in Denmark.",
    ...                 expected_answer="Hamlet was written by William Shakespeare.")
    >>> for r in AnswerSemanticSentenceSimilarity(models=hub).evaluate(sample):
    ...     print(f"{r.metric}: {r.score:.2f} {r.reason}")
    Sentence similarity mean: 0.57 mean best-match similarity 0.57 over 2 sentence(s)
    Sentence similarity min: 0.20 least similar answer sentence (0.20): 'It is set in Denmark.'
    """

    name = "Answer semantic sentence similarity"
    aliases = ("Answer s. sentence similarity",)
    description = (
        "For each answer sentence, its best cosine similarity with an expected-answer "
        "sentence; the mean and the minimum over answer sentences."
    )
    inputs = frozenset({Input.ANSWER, Input.EXPECTED_ANSWER})
    metrics = (
        MetricSpec(
            "Sentence similarity mean",
            "mean over answer sentences of the best match among expected-answer sentences",
            primary=True,
        ),
        MetricSpec(
            "Sentence similarity min",
            "the answer sentence least like any expected-answer sentence",
            threshold=0.5,
        ),
    )

    def texts(self, sample: Sample) -> list[str]:
        return split_sentences(sample.answer) + split_sentences(sample.expected_answer)

    def score_one(self, sample: Sample, encoder: TextEncoder) -> Mapping[str, Scored]:
        answer, expected = split_sentences(sample.answer), split_sentences(sample.expected_answer)
        if not answer:
            empty = Scored(0.0, EMPTY_ANSWER)
            return {"Sentence similarity mean": empty, "Sentence similarity min": empty}
        if not expected:
            raise SkipCase("the expected answer has no sentence to compare with")
        best = encoder.similarity(answer, expected).max(axis=1)
        worst = int(best.argmin())
        mean, low = _clip(float(best.mean())), _clip(float(best[worst]))
        return {
            "Sentence similarity mean": Scored(
                mean, f"mean best-match similarity {mean:.2f} over {len(answer)} sentence(s)"
            ),
            "Sentence similarity min": Scored(
                low, f"least similar answer sentence ({low:.2f}): {_quote(answer[worst])}"
            ),
        }


# --------------------------------------------------------------------------- answer vs question


@register
class AnswerRelevancySentence(EmbeddingEvaluator):
    """How related the answer is to the question, by its most related sentence (embeddings,
    no judge).

    >>> from evalrunner.models import ModelHub
    >>> hub = ModelHub(device="cpu")  # fp32 everywhere, so the digits hold on a GPU host too
    >>> sample = Sample(question="Who wrote Hamlet?",
    ...                 answer="Shakespeare wrote Hamlet. It is set in Denmark.")
    >>> for r in AnswerRelevancySentence(models=hub).evaluate(sample):
    ...     print(f"{r.metric}: {r.score:.2f} {r.reason}")
    Answer relevancy (sentence similarity): 0.92 most relevant sentence (0.92): 'Shakespeare
        wrote Hamlet.'
    """

    name = "Answer relevancy (sentence similarity)"
    aliases = ("Answer relevancy (sentence s.)",)
    description = (
        "How related the answer is to the question: the highest cosine similarity between "
        "the question and an answer sentence (no judge needed)."
    )
    inputs = frozenset({Input.QUESTION, Input.ANSWER})
    metrics = (
        MetricSpec(
            "Answer relevancy (sentence similarity)",
            "best similarity of an answer sentence to the question",
            # Question-to-answer similarity runs lower than answer-to-answer: with MiniLM an
            # on-topic answer scores ~0.5-0.8 and an off-topic one below ~0.2.
            threshold=0.4,
            primary=True,
        ),
    )

    def texts(self, sample: Sample) -> list[str]:
        return [sample.question, *split_sentences(sample.answer)]

    def score_one(self, sample: Sample, encoder: TextEncoder) -> Mapping[str, Scored]:
        sentences = split_sentences(sample.answer)
        if not sentences:
            return {self.name: Scored(0.0, EMPTY_ANSWER)}
        sims = encoder.similarity([sample.question], sentences)[0]
        best = int(sims.argmax())
        value = _clip(float(sims[best]))
        return {
            self.name: Scored(
                value, f"most relevant sentence ({value:.2f}): {_quote(sentences[best])}"
            )
        }


# --------------------------------------------------------------------------- answer vs context


@register
class Groundedness(EmbeddingEvaluator):
    """Whether every answer sentence is backed by the retrieved context, by the least
    backed sentence (embeddings, no judge): one unsupported sentence pulls it down.

    >>> from evalrunner.models import ModelHub
    >>> hub = ModelHub(device="cpu")  # fp32 everywhere, so the digits hold on a GPU host too
    >>> sample = Sample(question="Who wrote Hamlet?",
    ...                 answer="Shakespeare wrote Hamlet. It is set in Denmark.",
    ...                 contexts=["Hamlet is a tragedy by William Shakespeare."])
    >>> for r in Groundedness(models=hub).evaluate(sample):
    ...     print(f"{r.metric}: {r.score:.2f} {r.reason}")
    Groundedness: 0.20 least grounded sentence (0.20): 'It is set in Denmark.'
    """

    name = "Groundedness"
    aliases = ("Groundedness (semantic similarity)",)
    description = (
        "Whether every answer sentence is backed by the retrieved context: the least "
        "grounded sentence's best cosine similarity with a context sentence."
    )
    inputs = frozenset({Input.ANSWER, Input.CONTEXTS})
    metrics = (
        MetricSpec(
            "Groundedness",
            "min over answer sentences of the best similarity with a context sentence",
            # A sentence restating its source scores ~0.7-0.95 with MiniLM; an invented
            # claim on the same topic ~0.3-0.6.
            threshold=0.65,
            primary=True,
        ),
    )

    def texts(self, sample: Sample) -> list[str]:
        context = [s for chunk in _chunk_sentences(sample.contexts) for s in chunk]
        return split_sentences(sample.answer) + context

    def score_one(self, sample: Sample, encoder: TextEncoder) -> Mapping[str, Scored]:
        sentences = split_sentences(sample.answer)
        if not sentences:
            raise ValueError("the answer has no sentence to check against the context")
        context = [s for chunk in _chunk_sentences(sample.contexts) for s in chunk]
        if not context:
            raise SkipCase("the retrieved context has no text")
        best = encoder.similarity(sentences, context).max(axis=1)
        worst = int(best.argmin())
        value = _clip(float(best[worst]))
        return {
            self.name: Scored(
                value, f"least grounded sentence ({value:.2f}): {_quote(sentences[worst])}"
            )
        }


# --------------------------------------------------------------------------- context vs question


def _chunk_relevance(
    sample: Sample, encoder: TextEncoder, chunks: Sequence[str]
) -> tuple[np.ndarray, list[str]]:
    """relevance(chunk) = max over the chunk's sentences of S(question, sentence); also the
    best sentence of each chunk, for reasons."""
    per_chunk = _chunk_sentences(chunks)
    flat = [s for sentences in per_chunk for s in sentences]
    if not flat:
        raise SkipCase("the retrieved context has no text")
    sims = encoder.similarity([sample.question], flat)[0]
    relevance, best, start = [], [], 0
    for sentences in per_chunk:
        if not sentences:
            relevance.append(0.0)
            best.append("")
            continue
        part = sims[start : start + len(sentences)]
        relevance.append(float(part.max()))
        best.append(sentences[int(part.argmax())])
        start += len(sentences)
    return np.clip(np.asarray(relevance), 0.0, 1.0), best


def _context_texts(sample: Sample, chunks: Sequence[str]) -> list[str]:
    return [sample.question, *(s for c in _chunk_sentences(chunks) for s in c)]


@register
class ContextRelevancy(EmbeddingEvaluator):
    """How relevant the retrieved chunks are to the question: soft recall (the best chunk)
    and soft precision (the mean over chunks), by embedding similarity.

    >>> from evalrunner.models import ModelHub
    >>> hub = ModelHub(device="cpu")  # fp32 everywhere, so the digits hold on a GPU host too
    >>> sample = Sample(question="Who wrote Hamlet?", contexts=[
    ...     "Hamlet is a tragedy by William Shakespeare.", "Paris is the capital of France."])
    >>> for r in ContextRelevancy(models=hub).evaluate(sample):
    ...     print(f"{r.metric}: {r.score:.2f} {r.reason}")
    Context recall relevancy: 0.76 chunk 1 is the most relevant (0.76): 'Hamlet is a tragedy by
        William Shakespeare.'
    Context precision relevancy: 0.42 mean relevance 0.42 over 2 chunk(s); per chunk: 0.76, 0.08
    """

    name = "Context relevancy (soft recall and precision)"
    aliases = ("Context relevancy", "Context relevancy (s.r. & p.)")
    description = (
        "How relevant the retrieved chunks are to the question: a chunk's relevance is its "
        "best sentence's similarity to the question; recall = best chunk, precision = mean."
    )
    inputs = frozenset({Input.QUESTION, Input.CONTEXTS})
    metrics = (
        MetricSpec(
            "Context recall relevancy",
            "relevance of the most relevant chunk (something useful was retrieved)",
            threshold=0.5,
            primary=True,
        ),
        MetricSpec(
            "Context precision relevancy",
            "mean relevance over the chunks (how much of the context is on topic)",
            threshold=0.4,
        ),
    )

    def texts(self, sample: Sample) -> list[str]:
        return _context_texts(sample, sample.contexts)

    def score_one(self, sample: Sample, encoder: TextEncoder) -> Mapping[str, Scored]:
        relevance, best = _chunk_relevance(sample, encoder, sample.contexts)
        top = int(relevance.argmax())
        recall, precision = float(relevance.max()), float(relevance.mean())
        return {
            "Context recall relevancy": Scored(
                recall, f"chunk {top + 1} is the most relevant ({recall:.2f}): {_quote(best[top])}"
            ),
            "Context precision relevancy": Scored(
                precision,
                f"mean relevance {precision:.2f} over {len(relevance)} chunk(s); per chunk: "
                + ", ".join(f"{r:.2f}" for r in relevance[:10]),
            ),
        }


class RankOptions(ModelOptions):
    relevance_threshold: float = Field(
        default=0.7,
        ge=0.0,
        le=1.0,
        description="a chunk is relevant when its best sentence's similarity to the "
        "question reaches this",
    )
    max_rank: int = Field(default=10, ge=1, description="ranks beyond this count as not found")


@register
class ContextMeanReciprocalRank(EmbeddingEvaluator[RankOptions]):
    """1 / rank of the first retrieved chunk relevant to the question, so a retriever that
    ranks the answer lower scores lower.

    >>> from evalrunner.models import ModelHub
    >>> hub = ModelHub(device="cpu")  # fp32 everywhere, so the digits hold on a GPU host too
    >>> sample = Sample(question="Who wrote Hamlet?", contexts=[
    ...     "Paris is the capital of France.", "Hamlet is a tragedy by William Shakespeare."])
    >>> for r in ContextMeanReciprocalRank(models=hub).evaluate(sample):
    ...     print(f"{r.metric}: {r.score:.2f} {r.reason}")
    Context mean reciprocal rank: 0.50 first relevant chunk at rank 2 (relevance 0.76)
    """

    name = "Context mean reciprocal rank"
    aliases = ("Context MRR",)
    description = (
        "1 / rank of the first retrieved chunk relevant to the question (relevance as in "
        "Context relevancy); the run average is the MRR."
    )
    inputs = frozenset({Input.QUESTION, Input.CONTEXTS})
    metrics = (
        MetricSpec(
            "Context mean reciprocal rank",
            "reciprocal rank of the first relevant chunk (0 if none in the first max_rank)",
            threshold=0.5,
            primary=True,
        ),
    )

    def texts(self, sample: Sample) -> list[str]:
        return _context_texts(sample, sample.contexts[: self.options.max_rank])

    def score_one(self, sample: Sample, encoder: TextEncoder) -> Mapping[str, Scored]:
        options = self.options
        relevance, _ = _chunk_relevance(sample, encoder, sample.contexts[: options.max_rank])
        hits = np.flatnonzero(relevance >= options.relevance_threshold)
        if hits.size == 0:
            return {
                self.name: Scored(
                    0.0,
                    f"no chunk in the first {min(options.max_rank, len(relevance))} reaches "
                    f"relevance {options.relevance_threshold:.2f} (best {relevance.max():.2f})",
                )
            }
        rank = int(hits[0]) + 1
        return {
            self.name: Scored(
                1.0 / rank,
                f"first relevant chunk at rank {rank} (relevance {relevance[hits[0]]:.2f})",
            )
        }
