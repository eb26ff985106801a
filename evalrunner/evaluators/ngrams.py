"""Counting n-grams and their overlap, shared by ROUGE-N, BLEU and Token F1."""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Sequence
from typing import TypeVar

T = TypeVar("T", bound=Hashable)


def ngrams_up_to(tokens: Sequence[str], orders: int) -> list[str | tuple[str, ...]]:
    """Every run of ``n`` consecutive tokens for n = 1 .. ``orders`` (none of an order longer
    than ``tokens``): the 1-grams are the tokens themselves, the others ``n``-tuples (``zip``
    over shifted slices: the same n-grams as rouge-score's ``_create_ngrams`` and nltk's
    ``ngrams`` at a fraction of their per-n-gram cost). A token never equals a tuple, so no
    two orders share a key."""
    grams: list[str | tuple[str, ...]] = list(tokens)
    for n in range(2, orders + 1):
        grams += zip(*[tokens[i:] for i in range(n)], strict=False)
    return grams


def clipped_matches_by_order(a: Sequence[str], b: Sequence[str], orders: int) -> list[int]:
    """For n = 1 .. ``orders``: how many n-grams of ``a`` and ``b`` match, each counted at
    most as often as it occurs in either (``sum((Counter(a_n) & Counter(b_n)).values())``).

    Every order of one side is counted in one Counter (:func:`ngrams_up_to`; the order of a
    shared key is 1 for a token, else its length): two Counters for all orders instead of
    two per order, whose construction was most of ROUGE-N's and BLEU's cost on short texts
    (issue 18). The smaller side's keys are looked up in the other's."""
    a_counts, b_counts = Counter(ngrams_up_to(a, orders)), Counter(ngrams_up_to(b, orders))
    if len(a_counts) > len(b_counts):
        a_counts, b_counts = b_counts, a_counts
    clipped = [0] * (orders + 1)
    for gram, count in a_counts.items():
        other = b_counts.get(gram)
        if other is not None:
            clipped[1 if isinstance(gram, str) else len(gram)] += min(count, other)
    return clipped[1:]


def ngram_total(tokens: Sequence[str], n: int) -> int:
    """How many n-grams ``tokens`` has (what the counts of :func:`ngrams` sum to)."""
    return max(0, len(tokens) - n + 1)


def clipped_matches(a: Counter[T], b: Counter[T]) -> int:
    """How many n-grams (or tokens) the two counts share, each counted at most as often as it
    occurs in either: ``sum((a & b).values())`` without Counter's per-key ``__missing__`` call
    for every n-gram that only one side has (most of them, for 2-grams and beyond)."""
    return sum(min(a[gram], b[gram]) for gram in a.keys() & b.keys())
