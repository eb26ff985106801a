"""BLEU-1..4 exactly as nltk's ``sentence_bleu`` computes them, each n-gram order counted once.

Calling ``sentence_bleu`` once per reported score (BLEU-1, -2, -3, -4) counts the 1-grams four
times, the 2-grams three times and so on, ten ``modified_precision`` calls a case, each
walking nltk's generator-based ``ngrams`` (~90% of the evaluator's time, cProfile on 3,000
pairs of 100 and 40 words). :func:`sentence_bleus` counts every order of the two texts at
once (:func:`~evalrunner.evaluators.ngrams.clipped_matches_by_order`) and then follows nltk's
own steps in nltk's order: the modified precisions, ``brevity_penalty``, the smoothing function
and the weighted geometric mean of ``corpus_bleu``. The counts are integers, so every score is
``sentence_bleu``'s to the bit (tests/unit/evaluators/test_rouge_bleu_equivalence.py).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

from evalrunner.evaluators.ngrams import clipped_matches_by_order, ngram_total
from evalrunner.evaluators.nltk_import import import_nltk

Smoothing = Callable[..., list[Any]]


def sentence_bleus(
    reference: Sequence[str],
    hypothesis: Sequence[str],
    weights: Sequence[tuple[float, ...]],
    smoothing: Smoothing,
) -> list[float]:
    """``sentence_bleu([reference], hypothesis, weights=w, smoothing_function=smoothing)``
    for each ``w`` of ``weights``, in one pass (nltk's ``corpus_bleu`` of one pair).

    The smoothing sees every order up to the longest weight tuple's at once, so it must
    smooth an order from that order and the ones before it (nltk's methods 0 to 4 do; 5 and
    7 look at the next order, and would give a shorter weight tuple another score)."""
    orders = max(len(weight) for weight in weights)
    clipped = clipped_matches_by_order(hypothesis, reference, orders)
    # modified_precision's denominator: the hypothesis's n-grams, at least 1
    totals = [max(1, ngram_total(hypothesis, n)) for n in range(1, orders + 1)]
    if clipped[0] == 0:
        return [0.0] * len(weights)
    # closest_ref_length of a single reference is its length.
    # nltk on first use, not at import: any nltk module runs nltk/__init__ (evaluators.rouge)
    import_nltk()
    from nltk.translate.bleu_score import brevity_penalty

    bp = brevity_penalty(len(reference), len(hypothesis))
    logs = _log_precisions(clipped, totals, smoothing, reference, hypothesis)
    # corpus_bleu's sum: a weight tuple shorter than the orders uses its first ones, and an
    # order whose (smoothed) precision is not above 0 is left out.
    return [
        bp
        * math.exp(
            math.fsum(w_i * log for w_i, log in zip(w, logs, strict=False) if log is not None)
        )
        for w in weights
    ]


def _log_precisions(
    clipped: Sequence[int],
    totals: Sequence[int],
    smoothing: Smoothing,
    reference: Sequence[str],
    hypothesis: Sequence[str],
) -> list[float | None]:
    """``math.log`` of each order's smoothed precision, None where it is not above 0 (what
    ``corpus_bleu`` skips), each computed once, not once per weight.

    nltk hands the smoothing function unnormalised ``Fraction``s, compares them with 0 and
    takes ``math.log`` of each, i.e. of ``float(p)``, which is ``numerator / denominator``
    (int true division, correctly rounded, so unnormalised or not gives the same float). For
    the method 1 the evaluator uses, that is done here on the integer counts, as method 1
    does it: a zero count becomes ``(0 + epsilon) / denominator``; a positive one
    ``numerator / denominator`` is above 0. Building and comparing the Fractions was a third
    of the evaluator's time (issue 18). Any other smoothing gets nltk's Fractions."""
    epsilon = _method1_epsilon(smoothing)
    if epsilon is None:
        import_nltk()
        from nltk.translate.bleu_score import Fraction

        p_n = [Fraction(c, t, _normalize=False) for c, t in zip(clipped, totals, strict=True)]
        p_n = smoothing(p_n, references=[reference], hypothesis=hypothesis, hyp_len=len(hypothesis))
        return [math.log(p) if p > 0 else None for p in p_n]
    values = [c / t if c else (c + epsilon) / t for c, t in zip(clipped, totals, strict=True)]
    return [math.log(v) if v > 0 else None for v in values]


def _method1_epsilon(smoothing: Smoothing) -> Any | None:
    """The epsilon of ``smoothing`` when it is nltk's ``SmoothingFunction(...).method1``
    (as given: method 1 adds it to the count unconverted)."""
    import_nltk()
    from nltk.translate.bleu_score import SmoothingFunction

    if getattr(smoothing, "__func__", None) is SmoothingFunction.method1:
        owner = getattr(smoothing, "__self__", None)
        if isinstance(owner, SmoothingFunction):
            return owner.epsilon
    return None
