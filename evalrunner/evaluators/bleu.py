"""BLEU-1..4 exactly as nltk's ``sentence_bleu`` computes them, each n-gram order counted once.

Calling ``sentence_bleu`` once per reported score (BLEU-1, -2, -3, -4) counts the 1-grams four
times, the 2-grams three times and so on, ten ``modified_precision`` calls a case, each
walking nltk's generator-based ``ngrams`` (~90% of the evaluator's time, cProfile on 3,000
pairs of 100 and 40 words). :func:`sentence_bleus` counts each order of the two texts once,
with ``zip`` over shifted slices, and then goes through nltk's own pieces in nltk's order:
its ``Fraction`` (unnormalised, as ``modified_precision`` returns it), ``brevity_penalty``,
the smoothing function and the weighted geometric mean of ``corpus_bleu``. The counts are
integers, so every score is ``sentence_bleu``'s to the bit
(tests/unit/evaluators/test_rouge_bleu_equivalence.py).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

from nltk.translate.bleu_score import Fraction, brevity_penalty

from evalrunner.evaluators.ngrams import clipped_matches, ngram_counts

Smoothing = Callable[..., list[Any]]


def sentence_bleus(
    reference: Sequence[str],
    hypothesis: Sequence[str],
    weights: Sequence[tuple[float, ...]],
    smoothing: Smoothing,
) -> list[float]:
    """``sentence_bleu([reference], hypothesis, weights=w, smoothing_function=smoothing)``
    for each ``w`` of ``weights``, in one pass (nltk's ``corpus_bleu`` of one pair)."""
    orders = max(len(weight) for weight in weights)
    p_n = [_modified_precision(reference, hypothesis, n) for n in range(1, orders + 1)]
    if p_n[0].numerator == 0:
        return [0.0] * len(weights)
    # closest_ref_length of a single reference is its length.
    bp = brevity_penalty(len(reference), len(hypothesis))
    p_n = smoothing(p_n, references=[reference], hypothesis=hypothesis, hyp_len=len(hypothesis))
    # corpus_bleu's sum: a weight tuple shorter than p_n uses its first orders.
    return [
        bp
        * math.exp(
            math.fsum(w_i * math.log(p_i) for w_i, p_i in zip(w, p_n, strict=False) if p_i > 0)
        )
        for w in weights
    ]


def _modified_precision(reference: Sequence[str], hypothesis: Sequence[str], n: int) -> Any:
    """nltk's ``modified_precision`` for one reference: hypothesis n-grams clipped by their
    count in the reference, over the hypothesis's n-grams (at least 1), unnormalised."""
    counts = ngram_counts(hypothesis, n)
    clipped = clipped_matches(counts, ngram_counts(reference, n))
    return Fraction(clipped, max(1, sum(counts.values())), _normalize=False)
