"""A seeded sample of interactions that depends only on the seed and each interaction's id:
not on the order records arrive in, nor on which run first sees them.

Each interaction gets a rank, the first 64 bits of SHA-256(``seed:id``) as a fraction in
[0, 1). A share ``p`` takes those ranked below ``p`` (each is in with probability ``p``, and a
late record gets the same decision it would have got on time); a count ``N`` takes the ``N``
lowest ranks of the run's new interactions.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict

from evalrunner.monitor.model import Interaction, MonitorError


class Sample(BaseModel):
    """How many to score: ``count`` interactions, or a ``share`` of them."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    count: int | None = None
    share: float | None = None

    def describe(self) -> str:
        return f"{self.count}" if self.count is not None else f"{(self.share or 0) * 100:g}%"


def parse_sample(text: str) -> Sample:
    """``50`` (a count), ``0.05`` or ``5%`` (a share); ``0`` would score nothing and is
    refused."""
    value = text.strip()
    try:
        if value.endswith("%"):
            share = float(value[:-1]) / 100
        elif re.fullmatch(r"\d+", value):
            count = int(value)
            if count < 1:
                raise ValueError
            return Sample(count=count)
        else:
            share = float(value)
    except ValueError:
        raise MonitorError(
            f"--sample {text!r}: give a count (50), a share (0.05) or a percentage (5%)"
        ) from None
    if not 0 < share <= 1:
        raise MonitorError(f"--sample {text!r}: a share must be above 0 and at most 1 (100%)")
    return Sample(share=share)


def rank(seed: int, interaction_id: str) -> float:
    digest = hashlib.sha256(f"{seed}:{interaction_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def choose(
    interactions: Sequence[Interaction], sample: Sample | None, seed: int
) -> list[Interaction]:
    """The sampled interactions, in time order (all of them without a sample)."""
    if sample is None:
        chosen = list(interactions)
    elif sample.share is not None:
        share = sample.share
        chosen = [i for i in interactions if rank(seed, i.id) < share]
    else:
        ranked = sorted(interactions, key=lambda i: (rank(seed, i.id), i.id))
        chosen = ranked[: sample.count]
    return sorted(chosen, key=lambda i: (i.timestamp, i.id))
