"""LLM-judge RAG metrics: faithfulness, answer relevancy, contextual precision, recall and
relevancy, hallucination, answer correctness and the Ragas composite.

Definitions (Q question, EA expected answer, RC retrieved chunks, AA answer):

* ``Faithfulness`` = claims of AA supported by RC / claims. An answer with no claims has
  nothing unsupported and scores 1 (said in the reason).
* ``Answer Relevancy`` = statements of AA relevant to Q / statements; no statements → 0.
* ``Answer relevancy (question generation)`` (Ragas style) — the judge writes N = 3 questions
  that AA answers, from AA alone, and says whether AA is noncommittal ("I don't know"):
  score = 0 if noncommittal, else the mean similarity of Q to the generated questions.
  Similarity is the cosine of embeddings (EVALUATORS.md), computed in the Score step with the
  run's embedding model (:mod:`.similarity`); per case, and where the run has no embedding
  model, it is :func:`lexical_similarity` (ROUGE-L F1 over stemmed content words), and the
  reason says which was used and why. Default threshold 0.5.
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
  as covered by AA or not (FN); F1 = TP / (TP + 0.5 · (FP + FN)). Similarity: as above,
  embeddings in the Score step, the ROUGE-L stand-in without a model.
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

The package, by what it holds: the registered evaluators (:mod:`.evaluators`), the metric
functions of the RAG family (:mod:`.rag`) and of the reference-based ones (:mod:`.answers`),
their rubrics as data (:mod:`.rubrics`), what they share (:mod:`.shared`) and the Score
step's part of the two with a similarity part (:mod:`.similarity`).
"""

from evalrunner.evaluators.judge_rag.answers import (
    answer_correctness,
    hallucination,
    ragas_composite,
)
from evalrunner.evaluators.judge_rag.evaluators import (
    AnswerCorrectness,
    AnswerRelevancy,
    AnswerRelevancyQuestionGeneration,
    ContextualPrecision,
    ContextualRecall,
    ContextualRelevancy,
    Faithfulness,
    HallucinationJudge,
    RagasComposite,
)
from evalrunner.evaluators.judge_rag.rag import (
    answer_relevancy,
    answer_relevancy_qg,
    contextual_precision,
    contextual_recall,
    contextual_relevancy,
    faithfulness,
)
from evalrunner.evaluators.judge_rag.shared import (
    factuality_f1,
    harmonic_mean,
    lexical_similarity,
    weighted_precision,
)

#: Where this package's evaluators come in the catalog (see evaluators.registry).
CATALOG_POSITION = 110

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
