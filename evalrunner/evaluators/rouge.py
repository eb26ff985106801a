"""ROUGE-1/2/L exactly as rouge-score computes them, at a fraction of its cost per case.

rouge-score's ``RougeScorer(use_stemmer=True)`` spends most of a case in two places
(cProfile, 3,000 pairs of 100 and 40 words): nltk's Porter stemmer, run again on every
token of every call (~60%), and ROUGE-L's longest common subsequence, a full
``len(target) × len(prediction)`` table of Python lists (~30%). This module keeps its
definitions and changes only how they are reached:

- :class:`StemmingTokenizer` does what rouge-score's ``DefaultTokenizer(use_stemmer=True)``
  does, with each word's final token memoised in a bounded LRU cache (rouge-score has no
  such cache; a suite's vocabulary is small, so nearly every word is a hit);
- :func:`lcs_length` is the bit-parallel LCS length (Allison & Dix 1986, Hyyrö 2004): one
  big-integer step per prediction token instead of a row of the table. The LCS length is an
  integer, so precision, recall and F1 come out bit for bit the same.

rouge-score's own ``scoring.fmeasure`` and ``scoring.Score`` build the results, and
tests/unit/evaluators/test_rouge_bleu_equivalence.py holds every score equal to
``RougeScorer``'s on a few hundred varied pairs.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache, lru_cache
from typing import TYPE_CHECKING

from rouge_score import scoring
from rouge_score.tokenize import NON_ALPHANUM_RE, VALID_TOKEN_RE

from evalrunner.evaluators.ngrams import clipped_matches_by_order, ngram_total
from evalrunner.evaluators.nltk_import import import_nltk

if TYPE_CHECKING:
    from nltk.stem.porter import PorterStemmer

#: Distinct words whose token is remembered. An English suite uses a few thousand; the
#: bound keeps a run over unbounded text (generated answers, many languages) at ≤ ~15 MiB.
STEM_CACHE_SIZE = 50_000
#: Longer "words" (hex digests, base64 blobs, runs of digits) are stemmed every time, never
#: cached: they rarely repeat, and the cache's memory stays bounded in bytes, not only in
#: entries (15 MiB measured when full of 64-character words, ~7 MiB of everyday ones).
MAX_CACHED_WORD = 64


@cache
def porter_stemmer() -> PorterStemmer:
    """The one Porter stemmer, built on first use: rouge-score's DefaultTokenizer builds
    ``porter.PorterStemmer()`` (NLTK_EXTENSIONS mode), and it sets its state only when built,
    so one serves every thread.

    Imported here, not at the top: importing any nltk module runs ``nltk/__init__``, which
    imports nearly all of nltk; the registry imports every evaluator module, so a run that
    selects no stemming metric should not pay it (docs/upstream/nltk-eager-init.md), and one
    that does imports it without scipy and scikit-learn (:mod:`evaluators.nltk_import`)."""
    import_nltk()
    from nltk.stem.porter import PorterStemmer

    return PorterStemmer()


def token_of(word: str) -> str | None:
    """The token rouge-score keeps for ``word`` (lowercase ``[a-z0-9]+``), or None where it
    drops it: stemmed only above 3 characters, then checked as its tokenizer checks."""
    token = porter_stemmer().stem(word) if len(word) > 3 else word
    return token if VALID_TOKEN_RE.match(token) else None


#: :func:`token_of`, memoised (rouge-score has no such cache and stems every token again on
#: every call, ~60% of its time); thread-safe, least recently used words evicted first.
rouge_token = lru_cache(maxsize=STEM_CACHE_SIZE)(token_of)


class StemmingTokenizer:
    """rouge-score's ``tokenize.tokenize(text, PorterStemmer())`` with memoised stems (a
    ``rouge_score.tokenizers.Tokenizer`` by its method: ``RougeScorer(tokenizer=...)`` takes it).

    Same steps: lowercase, every run of characters outside ``[a-z0-9]`` becomes a space,
    split, stem words longer than 3 characters, drop what is not ``[a-z0-9]+``. After the
    substitution the text holds only ``[a-z0-9 ]``, so ``str.split()`` splits where
    rouge-score's ``\\s+`` does (the empty pieces it makes at the ends it drops itself).
    """

    def tokenize(self, text: str) -> list[str]:
        tokens = []
        for word in NON_ALPHANUM_RE.sub(" ", text.lower()).split():
            if word.isdigit():
                # A number is its own token: every Porter rule matches an ending made of
                # letters (held for 200,000 numbers by the equivalence test), and numbers
                # (amounts, dates, ids) seldom repeat, so each missed the cache and was
                # stemmed anyway.
                tokens.append(word)
                continue
            token = rouge_token(word) if len(word) <= MAX_CACHED_WORD else token_of(word)
            if token is not None:
                tokens.append(token)
        return tokens


def ngram_scores(
    target: Sequence[str], prediction: Sequence[str], orders: int
) -> list[scoring.Score]:
    """ROUGE-1 .. ROUGE-``orders`` as rouge-score's ``_score_ngrams``: clipped n-gram matches
    over the n-grams of each side (at least 1), every order counted in one pass."""
    matches = clipped_matches_by_order(target, prediction, orders)
    scores = []
    for n, matched in enumerate(matches, start=1):
        precision = matched / max(ngram_total(prediction, n), 1)
        recall = matched / max(ngram_total(target, n), 1)
        scores.append(
            scoring.Score(
                precision=precision, recall=recall, fmeasure=scoring.fmeasure(precision, recall)
            )
        )
    return scores


def lcs_score(target: Sequence[str], prediction: Sequence[str]) -> scoring.Score:
    """ROUGE-L as rouge-score's ``_score_lcs`` (0 for an empty side)."""
    if not target or not prediction:
        return scoring.Score(precision=0, recall=0, fmeasure=0)
    length = lcs_length(target, prediction)
    precision = length / len(prediction)
    recall = length / len(target)
    return scoring.Score(
        precision=precision, recall=recall, fmeasure=scoring.fmeasure(precision, recall)
    )


def lcs_length(a: Sequence[str], b: Sequence[str]) -> int:
    """Length of the longest common subsequence of ``a`` and ``b``, bit-parallel.

    Hand-written because no dependency here offers an LCS over token sequences (rouge-score's
    is the quadratic table this replaces). Bit ``i`` of ``v`` stands for ``a[i]``; each token
    of ``b`` updates all of them at once with Hyyrö's step ``v = (v + u) | (v - u)`` where
    ``u = v & match(token)`` (``v - u`` is ``v & ~match`` as ``u``'s bits are ``v``'s). The
    LCS length is the number of bits of ``a`` that have become 0.
    """
    matches: dict[str, int] = {}
    for i, token in enumerate(a):
        matches[token] = matches.get(token, 0) | (1 << i)
    full = (1 << len(a)) - 1
    v = full
    for token in b:
        match = matches.get(token)
        if match:
            u = v & match
            v = ((v + u) | (v - u)) & full
    return len(a) - v.bit_count()
