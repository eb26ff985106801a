"""What a perturbation is, as the event names it and as the manifest records it.

:class:`PerturbationSpec` is one entry of the event's ``perturbations`` list (or one
``--perturb KIND[:INTENSITY[:SEED]]`` of the CLI); :class:`Perturbation` is what a perturbed
case carries in the manifest and every record after it: which case it perturbs, how, and the
text it started from, so reports can show original and perturbed side by side.
"""

from __future__ import annotations

import hashlib
import random
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

from evalrunner.suite.model import VARIANT, Perturbation
from evalrunner.targets.spec import integral

__all__ = ["VARIANT", "Perturbation", "PerturbationSpec", "case_rng"]


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


def case_rng(seed: int, kind: str, case_id: str, field: str) -> random.Random:
    """The generator for one text of one case: derived from the seed, the kind, the case id
    and the field by SHA-256 (never ``hash()``, which is salted per process), so each case
    gets its own draw and the same draw on every machine. Here, next to the seed it draws
    from, so every kind (the registry's and misinformation, which the registry lists) can
    use it without the two importing each other."""
    digest = hashlib.sha256(f"{seed}\x00{kind}\x00{case_id}\x00{field}".encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))
