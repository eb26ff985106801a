"""What every model-based evaluator shares: its model option, the run's model hub, and
skipping (never crashing, never inventing a score) when its model is not on the machine."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar, Self

from pydantic import BaseModel, ConfigDict, Field
from typing_extensions import TypeVar

from evalrunner.evaluators.base import BatchEvaluator, RunServices
from evalrunner.models import ModelHub, ModelRole, ModelUnavailable


class ModelOptions(BaseModel):
    """Options of a model evaluator (``evaluator_options`` in the event)."""

    model_config = ConfigDict(extra="forbid")

    model: str | None = Field(
        default=None,
        description="model name or local path; default: the role's default "
        "(see `evalrunner metrics` and the README, 'Model metrics')",
    )


#: A model evaluator's options model: :class:`ModelOptions` or one that extends it.
ModelOptionsT = TypeVar("ModelOptionsT", bound=ModelOptions, default=ModelOptions, covariant=True)


class ModelEvaluator(BatchEvaluator[ModelOptionsT]):
    """A batched evaluator backed by one model of ``role``.

    The Score step builds every model evaluator of a run with the run's one
    :class:`ModelHub` (``models=``), so they share loaded models and computed embeddings; built
    without one, an evaluator makes its own hub on first use.
    """

    role: ClassVar[ModelRole]
    options_model: ClassVar[type[BaseModel]] = ModelOptions

    def __init__(
        self,
        thresholds: Mapping[str, float] | None = None,
        options: Mapping[str, Any] | None = None,
        *,
        models: ModelHub | None = None,
        threshold: float | None = None,
    ) -> None:
        super().__init__(thresholds, options, threshold=threshold)
        self._models = models

    @classmethod
    def for_run(
        cls,
        thresholds: Mapping[str, float] | None,
        options: Mapping[str, Any] | None,
        services: RunServices,
    ) -> Self:
        return cls(thresholds, options, models=services.models)

    @property
    def hub(self) -> ModelHub:
        """The run's hub; an evaluator used on its own makes a default one on first use."""
        if self._models is None:
            self._models = ModelHub()
        return self._models

    def model_name(self, role: ModelRole | None = None) -> str:
        """The model this run uses for ``role`` (the evaluator's own role by default)."""
        role = role or self.role
        if role is self.role:
            chosen = self.options.model
            if chosen:
                return str(chosen)
        return self.hub.model_settings.default_model(role)

    #: Whether the run's judge scores this evaluator when its model is missing (Toxicity);
    #: the estimate then counts those judge calls (see :meth:`model_present`).
    judged_without_model: ClassVar[bool] = False

    def model_present(self) -> bool:
        """Whether this evaluator's model is on this machine, found without loading it
        (asked only of evaluators :attr:`judged_without_model`)."""
        return True

    #: Other roles this evaluator loads a model for (besides its own ``role``).
    extra_roles: ClassVar[tuple[ModelRole, ...]] = ()

    def models_used(self) -> list[str]:
        """The models this run's scores depend on: a regression is only meaningful between
        runs scored with the same ones."""
        return [self.model_name(), *(self.model_name(r) for r in self.extra_roles)]

    def model_unavailable(self, exc: ModelUnavailable) -> str:
        self.hub.report(exc, self.name)
        return (
            f"skipped: {exc.role} model {exc.model!r} is not available on this machine "
            "(the run's problems say how to provide it)"
        )
