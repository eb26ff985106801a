"""What a perturbation is, as the event names it and as the manifest records it.

:class:`PerturbationSpec` is one entry of the event's ``perturbations`` list (or one
``--perturb KIND[:INTENSITY[:SEED]]`` of the CLI); :class:`Perturbation` is what a perturbed
case carries in the manifest and every record after it: which case it perturbs, how, and the
text it started from, so reports can show original and perturbed side by side.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

from evalrunner.suite.model import Perturbation
from evalrunner.suite.variants import VARIANT
from evalrunner.targets.spec import integral

__all__ = ["VARIANT", "Perturbation", "PerturbationSpec"]


Name = Annotated[str, Field(min_length=1, max_length=40, pattern=r"^[A-Za-z0-9][A-Za-z0-9_.:@-]*$")]


class PerturbationSpec(BaseModel):
    """One perturbation of a run: a kind, how much of the text it touches, and its seed."""

    model_config = ConfigDict(extra="forbid")

    kind: str = Field(min_length=1, description="A perturbator, e.g. typos, synonym, comma.")
    intensity: float | None = Field(
        default=None,
        gt=0,
        le=1,
        description="Share of the characters (character kinds) or words (word kinds) touched; "
        "default: the kind's own (see 'evalrunner perturbations').",
    )
    seed: Annotated[int, Field(ge=0, le=2**32 - 1), integral] = Field(
        default=0, description="Same seed, same perturbed text, anywhere."
    )
    name: Name | None = Field(
        default=None,
        description="Label in the reports; default the kind, or kind@intensity when a kind "
        "is given more than once.",
    )
    context: bool = Field(
        default=False,
        description="Also perturb the retrieved contexts of cases whose answers were computed "
        "elsewhere (test-lab suites).",
    )
