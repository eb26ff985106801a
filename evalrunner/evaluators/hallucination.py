"""Hallucination: is the answer consistent with the retrieved context, by a cross-encoder.

A hallucination cross-encoder (by default Vectara's HHEM,
``vectara/hallucination_evaluation_model``) reads (premise, hypothesis) = (retrieved context,
answer) and gives the probability that the answer is supported by the context. Vectara calls
that number the *factual consistency score*; it is calibrated, so 0.5 is the natural cut
(Vectara's own advice) and the metric's default threshold. Higher is better: 1 = consistent,
0 = hallucinated. A model with one output gives the score directly; a model with several
labels (an NLI cross-encoder, or an HHEM variant that names its classes) gives the
probability of its label named consistent, entailment or supported.

Premise, two ways (option ``per_chunk``):

* ``false`` (default): the non-empty chunks joined with blank lines, scored once. This is the
  metric as defined (the answer against the whole retrieved context), and the only form in
  which an answer that combines facts from two chunks counts as consistent: no single chunk
  supports it all, so a per-chunk score would flag a faithful synthesis as a hallucination.
* ``true``: each chunk scored on its own and the best one kept (the answer is consistent
  when some chunk supports it); the reason names that chunk. Use it with a short-window
  model (HHEM-1.0 reads 512 tokens) and long contexts, where the joined premise would be cut.

Cross-encoders read a limited window and silently cut what does not fit (the longer text of
the pair first, usually the context). When a pair exceeds the model's window the reason says
so, pointing at ``per_chunk``, instead of letting a truncated context pass for the whole one.

An empty answer is skipped: whether nothing is consistent with a context is undefined (other
metrics flag empty answers). A context whose chunks are all blank is skipped too.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import ClassVar

import numpy as np
from pydantic import Field

from evalrunner.evaluators.base import Input, MetricSpec, Sample, Scored, SkipCase
from evalrunner.evaluators.model_base import ModelEvaluator, ModelOptions
from evalrunner.evaluators.registry import register
from evalrunner.models import ModelRole
from evalrunner.models.scorers import PairScorer

#: Where this module's evaluators come in the catalog (see evaluators.registry).
CATALOG_POSITION = 160

METRIC = "Factual consistency"
#: Label names (prefixes) that mean "the hypothesis is supported" in multi-label models.
CONSISTENT_LABELS = ("consistent", "entail", "support")
EMPTY_ANSWER = "the answer is empty: there is no claim to check against the context"
EMPTY_CONTEXT = "the retrieved context has no text"

Pair = tuple[str, str]


class HallucinationOptions(ModelOptions):
    per_chunk: bool = Field(
        default=False,
        description="score the answer against each retrieved chunk separately and keep the "
        "best (for short-window models and long contexts); default: all chunks joined, so "
        "an answer that combines several chunks counts as consistent",
    )


def _chunks(sample: Sample) -> list[tuple[int, str]]:
    """Non-empty chunks with their 0-based position among the retrieved chunks."""
    return [(i, c.strip()) for i, c in enumerate(sample.contexts) if c.strip()]


def _pairs(sample: Sample, per_chunk: bool) -> list[Pair]:
    """The (premise, hypothesis) pairs of one sample, in chunk order."""
    answer = (sample.answer or "").strip()
    chunks = [c for _, c in _chunks(sample)]
    if not answer or not chunks:
        return []
    if per_chunk:
        return [(c, answer) for c in chunks]
    return [("\n\n".join(chunks), answer)]


def overflowing(scorer: PairScorer, pairs: Sequence[Pair]) -> set[Pair]:
    """The pairs longer than the cross-encoder's window (which it cuts without a word).

    Best effort: a model that exposes no tokenizer or no window is assumed to read it all."""
    tokenizer = getattr(scorer.model, "tokenizer", None)
    limit = getattr(scorer.model, "max_seq_length", None)
    unique = list(dict.fromkeys(pairs))
    if tokenizer is None or not isinstance(limit, int) or not unique:
        return set()
    try:
        encoded = tokenizer(
            [p for p, _ in unique], [h for _, h in unique], truncation=False, verbose=False
        )
    except Exception:  # a tokenizer that cannot count is no reason to fail the metric
        return set()
    return {
        pair for pair, ids in zip(unique, encoded["input_ids"], strict=True) if len(ids) > limit
    }


@register
class Hallucination(ModelEvaluator[HallucinationOptions]):
    """Consistency of the answer with the retrieved context by a dedicated cross-encoder:
    cheaper and more repeatable than the judge variant, and it needs no expected context.

    The example builds a cross-encoder that has learnt nothing (every weight 0): it cannot
    tell consistent from hallucinated and says 0.5 for every pair, Vectara's cut (the first
    chunk wins the tie). Telling them apart is what a trained model (HHEM by default) adds.

    >>> import tempfile, torch
    >>> from transformers import BertConfig, BertForSequenceClassification, BertTokenizerFast
    >>> folder = tempfile.mkdtemp()
    >>> words = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "hamlet", "is", "by", "shakespeare"]
    >>> _ = BertTokenizerFast(vocab={w: i for i, w in enumerate(words)}).save_pretrained(folder)
    >>> config = BertConfig(vocab_size=len(words), hidden_size=8, num_hidden_layers=1,
    ...                     num_attention_heads=1, intermediate_size=8, num_labels=1)
    >>> model = BertForSequenceClassification(config)
    >>> with torch.no_grad():  # all weights 0: a model that cannot tell (sigmoid(0) = 0.5)
    ...     _ = [p.zero_() for p in model.parameters()]
    >>> model.save_pretrained(folder)
    >>> sample = Sample(question="Who wrote Hamlet?", answer="Hamlet is by Marlowe.",
    ...                 contexts=["Hamlet is by Shakespeare.", "It is set in Denmark."])
    >>> checker = Hallucination(options={"model": folder, "per_chunk": True})
    >>> for r in checker.evaluate(sample):
    ...     print(f"{r.metric}: {r.score:.2f} {r.reason}")
    Factual consistency: 0.50 consistency 0.50, best supported by chunk 1 of 2
    """

    name = "Hallucination"
    description = (
        "Whether the answer is consistent with the retrieved context: a hallucination "
        "cross-encoder's (default Vectara HHEM) factual consistency score, 1 = consistent."
    )
    inputs = frozenset({Input.ANSWER, Input.CONTEXTS})
    role: ClassVar[ModelRole] = ModelRole.HALLUCINATION
    metrics = (
        MetricSpec(
            METRIC,
            "probability that the retrieved context supports the answer (0 = hallucinated)",
            # HHEM's score is calibrated: Vectara advises 0.5 as the consistent/hallucinated cut.
            threshold=0.5,
            primary=True,
        ),
    )

    def score_batch(self, samples: Sequence[Sample]) -> list[Mapping[str, Scored] | Exception]:
        per_chunk = self.options.per_chunk
        scorer = self.hub.cross_encoder(self.model_name(), ModelRole.HALLUCINATION)
        column = 0 if scorer.num_labels == 1 else scorer.label_index(*CONSISTENT_LABELS)
        wanted = [_pairs(s, per_chunk) for s in samples]
        every = [p for pairs in wanted for p in pairs]
        values: np.ndarray | list[float] = scorer.scores(every)[:, column] if every else []
        cut = overflowing(scorer, every)
        out: list[Mapping[str, Scored] | Exception] = []
        start = 0
        for sample, pairs in zip(samples, wanted, strict=True):
            found = [float(v) for v in values[start : start + len(pairs)]]
            start += len(pairs)
            try:
                out.append(self._one_sample(sample, pairs, found, cut, per_chunk))
            except Exception as exc:  # SkipCase included: the base class tells them apart
                out.append(exc)
        return out

    def _one_sample(
        self,
        sample: Sample,
        pairs: Sequence[Pair],
        values: Sequence[float],
        cut: set[Pair],
        per_chunk: bool,
    ) -> Mapping[str, Scored]:
        if not (sample.answer or "").strip():
            raise SkipCase(EMPTY_ANSWER)
        chunks = _chunks(sample)
        if not chunks:
            raise SkipCase(EMPTY_CONTEXT)
        truncated = sum(p in cut for p in pairs)
        if per_chunk:
            best = max(range(len(values)), key=values.__getitem__)
            value = values[best]
            reason = (
                f"consistency {value:.2f}, best supported by chunk {chunks[best][0] + 1} "
                f"of {len(sample.contexts)}"
            )
            if truncated:
                reason += f"; {truncated} chunk(s) exceed the model's window and were read in part"
        else:
            value = values[0]
            reason = f"consistency {value:.2f} with the {len(chunks)} retrieved chunk(s) joined"
            if truncated:
                reason += (
                    "; context and answer exceed the model's window, so the model read only "
                    "part of the context (consider the option per_chunk)"
                )
        return {METRIC: Scored(min(1.0, max(0.0, value)), reason)}
