"""The contract of a per-case evaluator whose score has a part only the Score step can compute.

A judge metric runs per case (the fan-out Lambda carries no model), yet some definitions also
need the run's embedding model (Answer correctness' similarity part, for one). Such an
evaluator scores each case with a stand-in and keeps on its result, in ``parts``, what it needs
to recompute the score; the Score step, where the run's :class:`~evalrunner.models.ModelHub`
lives (the Score Lambda, a local run, or the GPU job), calls :meth:`ScoreStepPart.rescore_run`
over every answered case, and Aggregate puts each result it returns in place of the per-case
result of the same metric.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import TYPE_CHECKING, ClassVar

from evalrunner.evaluators.base import MetricResult, Sample

if TYPE_CHECKING:
    from evalrunner.models import ModelHub


class ScoreStepPart(ABC):
    """Mixed into an evaluator whose per-case score the Score step recomputes."""

    name: ClassVar[str]  # the evaluator's

    @abstractmethod
    def rescore_run(
        self, cases: Sequence[tuple[Sample, Sequence[MetricResult]]], models: ModelHub
    ) -> list[list[MetricResult]]:
        """For each answered case (its sample and its per-case results), the results that
        replace those of the same metric: empty where nothing is to be replaced (the metric
        was skipped or failed for that case). Never raises for one case."""

    @abstractmethod
    def score_step_models(self) -> list[str]:
        """The models the recomputed scores depend on (only after ``rescore_run`` used them;
        empty when it fell back to the stand-in)."""
