"""BERTScore: how well the answer's tokens and the expected answer's tokens match in meaning.

Each token of one text is matched to its most similar token (cosine of contextual
embeddings) in the other: precision averages that best match over the answer's tokens (does
the answer say things the expected answer does not?), recall over the expected answer's
tokens (does the answer leave things out?), F1 = 2PR / (P + R). The bert-score library does
the work for the whole run in one call; pairs repeated over iterations are scored once.

Scores are not rescaled with a baseline (bert-score ships baselines only for its own
backbones, not for the packaged MiniLM), so the default threshold is set for the backbone
that runs everywhere: all-MiniLM-L6-v2, last layer. Measured on 10 paraphrase pairs and 10
unrelated pairs: paraphrases score F1 0.62–0.93 (precision and recall 0.61–0.95), unrelated
answers 0.01–0.26 (precision and recall at most 0.30). A threshold of 0.5 sits in that gap.
Backbones whose raw scores crowd near 1 (roberta-large scores unrelated sentences about
0.8) need a higher threshold, set with the run's thresholds.

Cosines can be slightly negative for unrelated tokens; precision and recall are clipped to
[0, 1] and F1 is computed from the clipped values, so the three always agree.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import ClassVar

import numpy as np
from pydantic import Field

from evalrunner.evaluators.base import Input, MetricSpec, Sample, Scored
from evalrunner.evaluators.model_base import ModelEvaluator, ModelOptions
from evalrunner.evaluators.registry import register
from evalrunner.models import ModelRole

#: Where this module's evaluators come in the catalog (see evaluators.registry).
CATALOG_POSITION = 150

PRECISION = "BERTScore precision"
RECALL = "BERTScore recall"
F1 = "BERTScore F1"
EMPTY_ANSWER = "the answer is empty"
#: Paraphrases score 0.62+ and unrelated answers 0.26- with MiniLM (module docstring).
THRESHOLD = 0.5


class BertScoreOptions(ModelOptions):
    num_layers: int | None = Field(
        default=None,
        ge=1,
        description="which hidden layer's embeddings to compare; default: bert-score's "
        "choice for its known backbones, else the model's last layer",
    )


def f1(precision: float, recall: float) -> float:
    """Harmonic mean of precision and recall: 0 when both are 0, NaN when either is."""
    total = precision + recall
    if math.isnan(total):
        return math.nan
    return 2 * precision * recall / total if total > 0 else 0.0


@register
class BERTScore(ModelEvaluator[BertScoreOptions]):
    """BERTScore of the answer against the expected answer. The name is the exact one
    existing events use; an empty answer is a wrong answer and scores 0.

    >>> from evalrunner.models import ModelHub
    >>> hub = ModelHub(device="cpu")  # fp32 everywhere, so the digits hold on a GPU host too
    >>> sample = Sample(question="Who wrote Hamlet?", answer="Shakespeare wrote Hamlet.",
    ...                 expected_answer="Hamlet was written by William Shakespeare.")
    >>> for r in BERTScore(models=hub).evaluate(sample):
    ...     print(f"{r.metric}: {r.score:.2f} {r.reason}")
    BERTScore precision: 0.92 answer tokens match the expected answer at 0.92
        (sentence-transformers/all-MiniLM-L6-v2)
    BERTScore recall: 0.80 expected-answer tokens match the answer at 0.80
        (sentence-transformers/all-MiniLM-L6-v2)
    BERTScore F1: 0.85 F1 0.85 (precision 0.92, recall 0.80;
        sentence-transformers/all-MiniLM-L6-v2): the expected answer has content the answer lacks
    """

    name = "BERT Score"
    aliases = ("BERTScore",)
    description = (
        "BERTScore precision, recall and F1 of the answer against the expected answer "
        "(bert-score, token embeddings of all-MiniLM-L6-v2 by default)."
    )
    inputs = frozenset({Input.ANSWER, Input.EXPECTED_ANSWER})
    role: ClassVar[ModelRole] = ModelRole.BERTSCORE
    metrics = (
        MetricSpec(
            PRECISION,
            "how much of the answer's meaning is found in the expected answer",
            threshold=THRESHOLD,
        ),
        MetricSpec(
            RECALL,
            "how much of the expected answer's meaning is found in the answer",
            threshold=THRESHOLD,
        ),
        MetricSpec(
            F1,
            "harmonic mean of BERTScore precision and recall",
            threshold=THRESHOLD,
            primary=True,
        ),
    )

    def score_batch(self, samples: Sequence[Sample]) -> list[Mapping[str, Scored] | Exception]:
        name = self.model_name()
        scorer = self.hub.bertscore(name, self.options.num_layers)
        pairs = [_pair(s) for s in samples]
        unique = list(dict.fromkeys(p for p in pairs if p is not None))
        values: dict[tuple[str, str], tuple[float, float]] = {}
        if unique:
            p, r, _ = scorer.score([a for a, _ in unique], [e for _, e in unique])
            p, r = np.clip(p, 0.0, 1.0), np.clip(r, 0.0, 1.0)  # NaN stays NaN
            values = {
                pair: (float(pi), float(ri)) for pair, pi, ri in zip(unique, p, r, strict=True)
            }
        out: list[Mapping[str, Scored] | Exception] = []
        for pair in pairs:
            if pair is None:
                out.append({m.name: Scored(0.0, EMPTY_ANSWER) for m in self.metrics})
                continue
            precision, recall = values[pair]
            out.append(_scores(precision, recall, name))
        return out


def _pair(sample: Sample) -> tuple[str, str] | None:
    """(answer, expected answer) to score, or None for an empty answer: a wrong answer,
    scored 0 without asking the model (bert-score 0.3.13 raises on an empty text under
    transformers 5, which would fail the whole batch)."""
    answer = (sample.answer or "").strip()
    return (answer, (sample.expected_answer or "").strip()) if answer else None


def _scores(precision: float, recall: float, model: str) -> dict[str, Scored]:
    value = f1(precision, recall)
    reason = f"F1 {value:.2f} (precision {precision:.2f}, recall {recall:.2f}; {model})"
    if recall < precision - 0.05:
        reason += ": the expected answer has content the answer lacks"
    elif precision < recall - 0.05:
        reason += ": the answer has content the expected answer lacks"
    return {
        PRECISION: Scored(
            precision, f"answer tokens match the expected answer at {precision:.2f} ({model})"
        ),
        RECALL: Scored(
            recall, f"expected-answer tokens match the answer at {recall:.2f} ({model})"
        ),
        F1: Scored(value, reason),
    }
