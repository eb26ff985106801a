"""Judge scores on a 1..N form, mapped to [0, 1] the same way by every evaluator here."""

from __future__ import annotations

__all__ = ["normalised"]


def normalised(score: float, scale: int) -> float:
    """(score − 1) / (scale − 1): 1 → 0, scale → 1."""
    return (score - 1) / (scale - 1)
