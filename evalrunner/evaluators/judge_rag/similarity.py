"""The similarity part of judge metrics, scored with embeddings in the Score step.

Answer correctness and Answer relevancy (question generation) are defined with the cosine
similarity of embeddings, yet they run per case, where there is no model. Per case they score
with the ROUGE-L stand-in and keep the judge's part on the result (``parts``); the Score step
recomputes each score with the run's embedding model through the same formula function, and
Aggregate puts that result in place of the per-case one. Without a model (no models extra,
the model missing, the Score Lambda) the Score step rescores with the stand-in, so the reason
says why no model was used.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Mapping, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

from evalrunner.evaluators.base import MetricResult, Sample, Scored
from evalrunner.evaluators.judge_base import JudgeEvaluator
from evalrunner.evaluators.judge_rag.shared import (
    Similarity,
    embeddings_note,
    lexical_similarity,
    stand_in_note,
)
from evalrunner.evaluators.score_part import ScoreStepPart
from evalrunner.evaluators.semantic import cosine_similarity
from evalrunner.models import ModelRole, ModelUnavailable, default_model

if TYPE_CHECKING:
    from evalrunner.models import ModelHub


class SimilarityPartOptions(BaseModel):
    """Options of a judge metric with a similarity part (``evaluator_options``)."""

    model_config = ConfigDict(extra="forbid")

    embedding_model: str | None = Field(
        default=None,
        description="embedding model (name or local path) of the similarity part, computed "
        "in the Score step; default: the run's embedding model (the packaged "
        "all-MiniLM-L6-v2 locally, see 'Model metrics')",
    )


class EmbeddingSimilarityPart(JudgeEvaluator[SimilarityPartOptions], ScoreStepPart):
    """A single-metric judge evaluator whose score has a similarity part."""

    def __init__(
        self,
        thresholds: Mapping[str, float] | None = None,
        options: Mapping[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(thresholds, options, **kwargs)
        self._used: list[str] = []

    def embedding_model(self, models: ModelHub | None = None) -> str:
        """The option's model, else the embedding default of ``models`` (the run's hub;
        None: this process's environment now)."""
        chosen = self.options.embedding_model
        if chosen:
            return chosen
        if models is None:
            return default_model(ModelRole.EMBEDDING)
        return models.model_settings.default_model(ModelRole.EMBEDDING)

    @abstractmethod
    def texts(self, sample: Sample, parts: Mapping[str, Any]) -> list[str]:
        """Every text the similarity part of ``sample`` compares."""

    @abstractmethod
    def rescore(
        self, sample: Sample, parts: Mapping[str, Any], similarity: Similarity, note: str
    ) -> Scored:
        """The score from the kept parts with ``similarity`` (the metric's formula)."""

    def score_step_models(self) -> list[str]:
        return list(self._used)

    def _similarity(self, models: ModelHub, texts: list[str]) -> tuple[Similarity, str]:
        """Cosine of the embedding model when it loads (all texts encoded in one pass), the
        stand-in and the reason otherwise."""
        model = self.embedding_model(models)
        try:
            encoder = models.encoder(model)
            encoder.prefetch(t for t in texts if t.strip())
        except ModelUnavailable as exc:
            # Not reported as a run problem: that says "skipped", and this metric is scored
            # (with the stand-in); the reason says which model is missing and how to get it.
            return lexical_similarity, stand_in_note(f"no embedding model: {_why(exc)}")
        except Exception as exc:  # a model that fails to encode: the stand-in, said why
            why = f"the embedding model {model!r} failed: {type(exc).__name__}: {exc}"
            return lexical_similarity, stand_in_note(why)
        self._used = [model]
        return partial(cosine_similarity, encoder), embeddings_note(model)

    def rescore_run(
        self, cases: Sequence[tuple[Sample, Sequence[MetricResult]]], models: ModelHub
    ) -> list[list[MetricResult]]:
        metric = self.metrics[0].name
        kept: list[tuple[Sample, MetricResult] | None] = []
        for sample, results in cases:
            mine = next(
                (r for r in results if r.metric == metric and r.evaluator == self.name), None
            )
            ok = mine is not None and mine.status == "scored" and mine.parts is not None
            kept.append((sample, mine) if ok and mine is not None else None)
        todo = [k for k in kept if k is not None]
        if not todo:
            return [[] for _ in cases]
        texts: list[str] = []
        for sample, result in todo:
            try:
                texts += self.texts(sample, result.parts or {})
            except Exception:  # bad parts: that case keeps its stand-in (below)
                continue
        similarity, note = self._similarity(models, texts)
        return [[] if k is None else [self._rescored(*k, similarity, note)] for k in kept]

    def _rescored(
        self, sample: Sample, result: MetricResult, similarity: Similarity, note: str
    ) -> MetricResult:
        try:
            raw = self.rescore(sample, result.parts or {}, similarity, note)
        except Exception as exc:  # this case only: its per-case score stays, said why
            why = f"; similarity not rescored: {type(exc).__name__}: {exc}"
            return result.model_copy(update={"reason": result.reason + why})
        return self.apply_thresholds({result.metric: raw})[0]


def _why(exc: ModelUnavailable) -> str:
    """The hub's message, told for this option and this metric: the locator writes it for
    model evaluators (their option is 'model', and they are skipped; this one is not)."""
    text = exc.message.replace("'model' option", "'embedding_model' option")
    text = text.replace("option 'model'", "option 'embedding_model'")
    return text.replace(" Until then its evaluators are skipped.", "")
