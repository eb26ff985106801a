"""Counting n-grams and their overlap, shared by ROUGE-N, BLEU and Token F1."""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Sequence
from typing import TypeVar

T = TypeVar("T", bound=Hashable)


def ngram_counts(tokens: Sequence[str], n: int) -> Counter[tuple[str, ...]]:
    """How often each run of ``n`` consecutive tokens occurs (empty when there are fewer than
    ``n`` tokens). ``zip`` over shifted slices counts the same tuples as rouge-score's
    ``_create_ngrams`` and nltk's ``ngrams`` at a fraction of their per-n-gram cost."""
    return Counter(zip(*(tokens[i:] for i in range(n)), strict=False))


def clipped_matches(a: Counter[T], b: Counter[T]) -> int:
    """How many n-grams (or tokens) the two counts share, each counted at most as often as it
    occurs in either: ``sum((a & b).values())`` without Counter's per-key ``__missing__`` call
    for every n-gram that only one side has (most of them, for 2-grams and beyond)."""
    return sum(min(a[gram], b[gram]) for gram in a.keys() & b.keys())
