"""Summarization completeness and faithfulness, from an NLI cross-encoder and a bi-encoder.

The summary is the answer. The source is the retrieved context when the case has some (the
chunks, in order), else the question: a summarisation request usually carries the text to
summarise in the prompt ("Summarise this: ..."). The instruction then becomes part of the
source too, which costs nothing in faithfulness (a max over source sentences) and little in
completeness (one sentence among many).

``Summary faithfulness`` (primary, threshold 0.5)
    Summary and source are split into sentences (the context chunk by chunk, so a chunk
    without final punctuation does not run into the next). For each summary sentence s,
    f(s) = max over source sentences c of P(entailment | c, s) − P(contradiction | c, s),
    from an NLI cross-encoder (premise c, hypothesis s; default
    cross-encoder/nli-deberta-v3-xsmall). f(s) lies in [−1, 1]; the score is the mean of f
    over summary sentences, clipped to [0, 1] (a summary that mostly contradicts its source
    scores 0). 0.5 asks that summary sentences be entailed on average with a clear margin:
    every sentence entailed at ~0.9 scores ~0.9, one invented sentence in four ~0.7, one in
    two ~0.45. Only the first ``max_source_sentences`` (64) source sentences are read, so
    the pairwise work (summary × source sentences) stays bounded; the reason says when the
    source was cut. The reason names the least faithful summary sentence.

``Summary completeness`` (threshold 0.5)
    The summary sentences with f(s) ≥ ``faithful_threshold`` (0.5) are the faithful part;
    completeness = cosine similarity of the embeddings of the whole source and of the
    faithful part (joined), clipped to [0, 1]; 0 when no sentence is faithful, so invented
    content cannot earn coverage. Embeddings come from the run's embedding model (option
    ``embedding_model``). A bi-encoder reads a limited window (MiniLM: 256 word pieces), so
    for a long source this measures coverage of its beginning. With MiniLM, against a
    five-sentence HR policy: a summary of its main points 0.86, its first point alone 0.66,
    one side detail 0.42-0.59, an unrelated sentence 0.14; 0.5 fails summaries that miss
    the gist.

An empty summary scores 0 on both (it summarises nothing; a failed summary must fail, not
vanish as a skip). A source with no sentence is skipped. Both models are needed: when either
is missing the evaluator is skipped for the run (completeness cannot be computed without
embeddings, and half an evaluator would read as a complete result).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
from pydantic import Field

from evalrunner.evaluators.base import Input, MetricSpec, Sample, Scored, SkipCase
from evalrunner.evaluators.model_base import ModelEvaluator, ModelOptions
from evalrunner.evaluators.registry import register
from evalrunner.evaluators.sentences import split_sentences
from evalrunner.models import ModelRole
from evalrunner.models.scorers import TextEncoder

#: Where this module's evaluators come in the catalog (see evaluators.registry).
CATALOG_POSITION = 190

FAITHFULNESS = "Summary faithfulness"
COMPLETENESS = "Summary completeness"
EMPTY_SUMMARY = "the summary is empty: it summarises nothing"


class SummarizationOptions(ModelOptions):
    embedding_model: str | None = Field(
        default=None,
        description="embedding model (name or local path) for completeness; default: the "
        "run's embedding model",
    )
    faithful_threshold: float = Field(
        default=0.5,
        ge=-1.0,
        le=1.0,
        description="a summary sentence is faithful (counts for completeness) when its "
        "max entailment − contradiction over source sentences reaches this",
    )
    max_source_sentences: int = Field(
        default=64,
        ge=1,
        description="read only this many source sentences (bounds the summary × source "
        "NLI pairs); the reason says when the source was cut",
    )


def _clip(value: float) -> float:
    return float(min(1.0, max(0.0, value)))


def _quote(text: str, limit: int = 80) -> str:
    text = " ".join(text.split())
    return f"'{text[: limit - 1]}…'" if len(text) > limit else f"'{text}'"


def source_text(sample: Sample) -> str:
    """The text the summary summarises: the retrieved chunks joined, else the question."""
    chunks = [c.strip() for c in sample.contexts if c.strip()]
    return "\n\n".join(chunks) if chunks else sample.question.strip()


def source_sentences(sample: Sample) -> list[str]:
    """Sentences of the source, chunk by chunk."""
    chunks = [c for c in sample.contexts if c.strip()] or [sample.question]
    return [s for c in chunks for s in split_sentences(c)]


@dataclass(frozen=True)
class _Plan:
    """What one sample needs from the models."""

    summary: list[str]
    source: list[str]  # capped
    total: int  # source sentences before the cap

    def pairs(self) -> list[tuple[str, str]]:
        return [(c, s) for s in self.summary for c in self.source]


@register
class Summarization(ModelEvaluator[SummarizationOptions]):
    """Reference-free summary quality: no expected summary and no judge, only the source,
    so it can gate every summarisation case of a suite.

    The example builds a credulous stand-in NLI model (every weight 0, its output biased to
    "entailment"), so faithfulness is the same margin for every sentence, and completeness
    comes from the packaged MiniLM:

    >>> import tempfile, torch
    >>> from transformers import BertConfig, BertForSequenceClassification, BertTokenizerFast
    >>> from evalrunner.models import ModelHub
    >>> folder = tempfile.mkdtemp()
    >>> words = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "the", "meeting", "is", "on", "tuesday"]
    >>> _ = BertTokenizerFast(vocab={w: i for i, w in enumerate(words)}).save_pretrained(folder)
    >>> labels = {0: "contradiction", 1: "entailment", 2: "neutral"}
    >>> nli = BertForSequenceClassification(BertConfig(
    ...     vocab_size=len(words), hidden_size=8, num_hidden_layers=1, num_attention_heads=1,
    ...     intermediate_size=8, id2label=labels, label2id={v: k for k, v in labels.items()}))
    >>> with torch.no_grad():  # a credulous stand-in: every pair "entailed" (softmax of 0, 2, 0)
    ...     _ = [p.zero_() for p in nli.parameters()]
    ...     _ = nli.classifier.bias.copy_(torch.tensor([0.0, 2.0, 0.0]))
    >>> nli.save_pretrained(folder)
    >>> source = "The meeting moved to Tuesday at 10:00. Bring the budget. Room 4 is booked."
    >>> sample = Sample(question="Summarise the note.", answer="The meeting is on Tuesday.",
    ...                 contexts=[source])
    >>> summary = Summarization(options={"model": folder}, models=ModelHub(device="cpu"))
    >>> for r in summary.evaluate(sample):
    ...     print(f"{r.metric}: {r.score:.2f} {r.reason}")
    Summary faithfulness: 0.68 mean best entailment − contradiction 0.68 over 1 summary
        sentence(s); least faithful (0.68): 'The meeting is on Tuesday.'
    Summary completeness: 0.63 cosine similarity 0.63 between the source and the faithful 1 of 1
        summary sentence(s) (sentence-transformers/all-MiniLM-L6-v2)
    """

    name = "Summarization completeness and faithfulness"
    aliases = ("Summarization", "Summarization (c. and f.)")
    description = (
        "Summary (the answer) vs its source (retrieved context, else the question): NLI "
        "faithfulness clipped to [0, 1] and embedding completeness of the faithful part."
    )
    inputs = frozenset({Input.QUESTION, Input.ANSWER})
    role: ClassVar[ModelRole] = ModelRole.NLI
    metrics = (
        MetricSpec(
            FAITHFULNESS,
            "mean over summary sentences of max over source sentences of P(entailment) − "
            "P(contradiction), clipped to [0, 1]",
            threshold=0.5,
            primary=True,
        ),
        MetricSpec(
            COMPLETENESS,
            "cosine similarity of the source and the faithful summary sentences, clipped to [0, 1]",
            threshold=0.5,
        ),
    )

    extra_roles = (ModelRole.EMBEDDING,)

    def model_name(self, role: ModelRole | None = None) -> str:
        chosen = self.options.embedding_model
        if role is ModelRole.EMBEDDING and chosen:
            return str(chosen)
        return super().model_name(role)

    def score_batch(self, samples: Sequence[Sample]) -> list[Mapping[str, Scored] | Exception]:
        options = self.options
        # Both models first: a missing one skips the run before any work is spent.
        nli = self.hub.cross_encoder(self.model_name(), ModelRole.NLI)
        encoder = self.hub.encoder(self.model_name(ModelRole.EMBEDDING))
        entail, contradict = nli.label_index("entail"), nli.label_index("contradict")
        threshold = options.faithful_threshold

        plans: list[_Plan] = []
        for sample in samples:
            source = source_sentences(sample)
            plans.append(
                _Plan(
                    split_sentences(sample.answer),
                    source[: options.max_source_sentences],
                    len(source),
                )
            )
        every = [p for plan in plans for p in plan.pairs()]
        probs = nli.scores(every)
        margins = probs[:, entail] - probs[:, contradict] if every else np.zeros(0)

        per_sentence: list[np.ndarray] = []
        faithful: list[str] = []
        start = 0
        for plan in plans:
            n = len(plan.summary) * len(plan.source)
            block = margins[start : start + n].reshape(len(plan.summary), len(plan.source))
            start += n
            # No source: nothing supports any sentence (and the sample is skipped anyway).
            f_s = block.max(axis=1) if plan.source else np.full(len(plan.summary), -1.0)
            per_sentence.append(f_s)
            kept = [s for s, f in zip(plan.summary, f_s, strict=True) if f >= threshold]
            faithful.append(" ".join(kept))
        # Completeness embeds each source with its faithful part: all of them in one pass.
        encoder.prefetch(
            t
            for sample, part in zip(samples, faithful, strict=True)
            if part
            for t in (source_text(sample), part)
        )
        out: list[Mapping[str, Scored] | Exception] = []
        for sample, plan, f_s, part in zip(samples, plans, per_sentence, faithful, strict=True):
            try:
                out.append(self._one_sample(sample, plan, f_s, part, encoder))
            except Exception as exc:  # SkipCase included: the base class tells them apart
                out.append(exc)
        return out

    def _one_sample(
        self, sample: Sample, plan: _Plan, f_s: np.ndarray, part: str, encoder: TextEncoder
    ) -> Mapping[str, Scored]:
        if not plan.source:
            raise SkipCase("the source (retrieved context, else the question) has no sentence")
        if not plan.summary:
            empty = Scored(0.0, EMPTY_SUMMARY)
            return {FAITHFULNESS: empty, COMPLETENESS: empty}
        worst = int(f_s.argmin())
        faithfulness = _clip(float(f_s.mean()))
        cut = ""
        if plan.total > len(plan.source):
            cut = f" (source cut to its first {len(plan.source)} of {plan.total} sentences)"
        kept = int((f_s >= self.options.faithful_threshold).sum())
        why_faithful = (
            f"mean best entailment − contradiction {float(f_s.mean()):.2f} over "
            f"{len(plan.summary)} summary sentence(s); least faithful ({f_s[worst]:.2f}): "
            f"{_quote(plan.summary[worst])}{cut}"
        )
        if not part:
            why_complete = "no summary sentence is faithful to the source: nothing covers it"
            return {
                FAITHFULNESS: Scored(faithfulness, why_faithful),
                COMPLETENESS: Scored(0.0, why_complete),
            }
        source, summary = encoder.embed([source_text(sample), part])
        completeness = _clip(float(source @ summary))
        why_complete = (
            f"cosine similarity {completeness:.2f} between the source and the faithful "
            f"{kept} of {len(plan.summary)} summary sentence(s) ({encoder.name})"
        )
        return {
            FAITHFULNESS: Scored(faithfulness, why_faithful),
            COMPLETENESS: Scored(completeness, why_complete),
        }
