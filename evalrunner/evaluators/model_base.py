"""What every model-based evaluator shares: its model option, the run's model hub, and
skipping (never crashing, never inventing a score) when its model is not on the machine."""

from __future__ import annotations

from typing import ClassVar

from pydantic import BaseModel, ConfigDict, Field

from evalrunner.evaluators.base import BatchEvaluator
from evalrunner.models import ModelHub, ModelRole, ModelUnavailable, default_model


class ModelOptions(BaseModel):
    """Options of a model evaluator (``evaluator_options`` in the event)."""

    model_config = ConfigDict(extra="forbid")

    model: str | None = Field(
        default=None,
        description="model name or local path; default: the role's default "
        "(see `evalrunner metrics` and the README, 'Model metrics')",
    )


class ModelEvaluator(BatchEvaluator):
    """A batched evaluator backed by one model of ``role``.

    The Score step binds one :class:`ModelHub` per run to ``models`` so evaluators share
    loaded models and computed embeddings; used on its own, an evaluator makes its own hub.
    """

    role: ClassVar[ModelRole]
    options_model: ClassVar[type[BaseModel]] = ModelOptions
    models: ModelHub | None = None

    @property
    def hub(self) -> ModelHub:
        if self.models is None:
            self.models = ModelHub()
        return self.models

    def model_name(self, role: ModelRole | None = None) -> str:
        """The model this run uses for ``role`` (the evaluator's own role by default)."""
        role = role or self.role
        if role is self.role:
            chosen = getattr(self.options, "model", None)
            if chosen:
                return str(chosen)
        return default_model(role)

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
