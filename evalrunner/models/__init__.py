"""Models for the batched evaluators: where they are found, how they are loaded, and the
batched, deduplicating scorers the evaluators call.

Nothing here imports torch at module import: the Lambda-side install has no model code, and
an evaluator whose model cannot be loaded is skipped with :class:`ModelUnavailable`'s message.
"""

from evalrunner.models.hub import ModelHub
from evalrunner.models.locate import (
    PACKAGED_MINILM,
    ModelRole,
    ModelSettings,
    ModelUnavailable,
    default_model,
    locate,
)

__all__ = [
    "PACKAGED_MINILM",
    "ModelHub",
    "ModelRole",
    "ModelSettings",
    "ModelUnavailable",
    "default_model",
    "locate",
]
