"""Lexical overlap metrics: no model, cheap enough to run on every case of every run."""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Mapping
from functools import cache, lru_cache
from typing import ClassVar

from evalrunner.evaluators.base import Evaluator, Input, MetricSpec, Sample, Scored
from evalrunner.evaluators.bleu import Smoothing, sentence_bleus
from evalrunner.evaluators.ngrams import clipped_matches
from evalrunner.evaluators.nltk_import import import_nltk
from evalrunner.evaluators.registry import register
from evalrunner.evaluators.rouge import StemmingTokenizer, lcs_score, ngram_scores

#: Where this module's evaluators come in the catalog (see evaluators.registry).
CATALOG_POSITION = 10

_ANSWER_VS_EXPECTED = frozenset({Input.ANSWER, Input.EXPECTED_ANSWER})


@register
class RougeMetric(Evaluator):
    """ROUGE-1/2/L F1: word overlap with the expected answer, the long-standing summarisation
    measure; cheap and model-free, but blind to paraphrase (the same facts in another order
    score low on ROUGE-2 and ROUGE-L).

    >>> sample = Sample(
    ...     question="Who wrote Hamlet?",
    ...     answer="Hamlet was written by Shakespeare.",
    ...     expected_answer="William Shakespeare wrote Hamlet.",
    ... )
    >>> for r in RougeMetric().evaluate(sample):
    ...     print(f"{r.metric}: {r.score:.2f} {r.reason}")
    ROUGE-1: 0.44 ROUGE-1 F1 0.444 (precision 0.400, recall 0.500) against the expected answer
    ROUGE-2: 0.00 ROUGE-2 F1 0.000 (precision 0.000, recall 0.000) against the expected answer
    ROUGE-L: 0.22 ROUGE-L F1 0.222 (precision 0.200, recall 0.250) against the expected answer
    """

    name = "Rouge Metric"
    aliases = ("Rouge", "ROUGE")
    description = "ROUGE-1, ROUGE-2 and ROUGE-L F1 of the answer against the expected answer."
    inputs = _ANSWER_VS_EXPECTED
    metrics = (
        MetricSpec("ROUGE-1", "unigram overlap F1"),
        MetricSpec("ROUGE-2", "bigram overlap F1"),
        MetricSpec("ROUGE-L", "longest common subsequence F1", primary=True),
    )
    # rouge-score's definitions, reached faster (evaluators.rouge: memoised stems, a
    # bit-parallel LCS): the scores are RougeScorer(["rouge1", "rouge2", "rougeL"],
    # use_stemmer=True)'s to the bit, and only the three reported are computed.
    _TOKENIZER = StemmingTokenizer()

    def score(self, sample: Sample) -> Mapping[str, Scored]:
        assert sample.answer is not None and sample.expected_answer is not None
        target = self._TOKENIZER.tokenize(sample.expected_answer)
        prediction = self._TOKENIZER.tokenize(sample.answer)
        rouge_1, rouge_2 = ngram_scores(target, prediction, 2)
        result = {"ROUGE-1": rouge_1, "ROUGE-2": rouge_2, "ROUGE-L": lcs_score(target, prediction)}
        return {
            metric: Scored(
                s.fmeasure,
                f"{metric} F1 {s.fmeasure:.3f} (precision {s.precision:.3f}, "
                f"recall {s.recall:.3f}) against the expected answer",
            )
            for metric, s in result.items()
        }


_WORD = re.compile(r"\w+", re.UNICODE)


def _words(text: str) -> list[str]:
    return _WORD.findall(text.casefold())


@register
class Bleu(Evaluator):
    """Cumulative BLEU-1..4: n-gram precision against the expected answer, smoothed so a short
    answer with no 4-gram match is not flattened to 0.

    >>> sample = Sample(
    ...     question="Who wrote Hamlet?",
    ...     answer="Hamlet was written by Shakespeare.",
    ...     expected_answer="William Shakespeare wrote Hamlet.",
    ... )
    >>> for r in Bleu().evaluate(sample):
    ...     print(f"{r.metric}: {r.score:.2f} {r.reason}")
    BLEU-1: 0.40 BLEU-1 0.400 (5 answer words, 4 expected)
    BLEU-2: 0.10 BLEU-2 0.100 (5 answer words, 4 expected)
    BLEU-3: 0.07 BLEU-3 0.069 (5 answer words, 4 expected)
    BLEU-4: 0.06 BLEU-4 0.064 (5 answer words, 4 expected)
    """

    name = "BLEU"
    description = "BLEU-1..4 of the answer against the expected answer, smoothed for short texts."
    inputs = _ANSWER_VS_EXPECTED
    metrics = (
        MetricSpec("BLEU-1", "cumulative 1-gram BLEU", primary=True),
        MetricSpec("BLEU-2", "cumulative 2-gram BLEU"),
        MetricSpec("BLEU-3", "cumulative 3-gram BLEU"),
        MetricSpec("BLEU-4", "cumulative 4-gram BLEU"),
    )
    _WEIGHTS: ClassVar[dict[str, tuple[float, ...]]] = {
        "BLEU-1": (1.0,),
        "BLEU-2": (0.5, 0.5),
        "BLEU-3": (1 / 3, 1 / 3, 1 / 3),
        "BLEU-4": (0.25, 0.25, 0.25, 0.25),
    }

    def score(self, sample: Sample) -> Mapping[str, Scored]:
        assert sample.answer is not None and sample.expected_answer is not None
        hypothesis, reference = _words(sample.answer), _words(sample.expected_answer)
        if not hypothesis:
            return {m: Scored(0.0, f"{m} 0.000: the answer has no words") for m in self._WEIGHTS}
        # nltk's sentence_bleu for each weight, every n-gram order counted once (evaluators.bleu)
        weights = list(self._WEIGHTS.values())
        values = sentence_bleus(reference, hypothesis, weights, _smoothing())
        return {
            metric: Scored(
                float(value),
                f"{metric} {value:.3f} ({len(hypothesis)} answer words, {len(reference)} expected)",
            )
            for metric, value in zip(self._WEIGHTS, values, strict=True)
        }


@cache
def _smoothing() -> Smoothing:
    """Chen & Cherry's method 1: a small epsilon for zero n-gram counts, so a short answer
    with no 4-gram match is not flattened to 0 across the board. nltk is imported on first
    use: the registry imports this module for every run (evaluators.rouge says why)."""
    import_nltk()
    from nltk.translate.bleu_score import SmoothingFunction

    method: Smoothing = SmoothingFunction().method1  # nltk ships no types
    return method


_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCTUATION = str.maketrans("", "", string.punctuation)


def squad_normalize(text: str) -> str:
    """SQuAD's answer normalisation: lowercase, drop punctuation and articles, fold spaces."""
    text = text.casefold().translate(_PUNCTUATION)
    return " ".join(_ARTICLES.sub(" ", text).split())


# Token F1 and Exact match both normalise the same two texts of a case, one after the other:
# the second asks this cache (32 texts, enough for the cases in flight at once; texts over
# 4,096 characters are not kept, so the cache holds at most ~0.5 MiB whatever the answers).
_normalized_cached = lru_cache(maxsize=32)(squad_normalize)


def _normalized(text: str) -> str:
    return _normalized_cached(text) if len(text) <= 4096 else squad_normalize(text)


@register
class TokenF1(Evaluator):
    """SQuAD's token F1: partial credit for an answer that says part of the expected one, where
    exact match gives none. Case, punctuation and articles are ignored.

    >>> sample = Sample(
    ...     question="Who wrote Hamlet?",
    ...     answer="Hamlet was written by Shakespeare.",
    ...     expected_answer="William Shakespeare wrote Hamlet.",
    ... )
    >>> for r in TokenF1().evaluate(sample):
    ...     print(f"{r.metric}: {r.score:.2f} {r.success} - {r.reason}")
    Token F1: 0.44 False - 2 shared tokens: precision 0.400, recall 0.500
    """

    name = "Token F1"
    aliases = ("F1 score",)
    description = "SQuAD-style token overlap F1 of the answer against the expected answer."
    inputs = _ANSWER_VS_EXPECTED
    metrics = (MetricSpec("Token F1", "token overlap F1 after normalisation", primary=True),)

    def score(self, sample: Sample) -> Mapping[str, Scored]:
        assert sample.answer is not None and sample.expected_answer is not None
        predicted = _normalized(sample.answer).split()
        expected = _normalized(sample.expected_answer).split()
        common = clipped_matches(Counter(predicted), Counter(expected))
        if common == 0:
            return {"Token F1": Scored(0.0, "no token of the expected answer is in the answer")}
        precision, recall = common / len(predicted), common / len(expected)
        f1 = 2 * precision * recall / (precision + recall)
        return {
            "Token F1": Scored(
                f1,
                f"{common} shared tokens: precision {precision:.3f}, recall {recall:.3f}",
            )
        }


@register
class ExactMatch(Evaluator):
    """SQuAD's exact match: pass/fail equality after normalisation (case, punctuation, articles),
    for short factual answers where anything else is wrong.

    >>> sample = Sample(question="Tallest tower in Paris?", answer="The Eiffel Tower!",
    ...                 expected_answer="eiffel tower")
    >>> for r in ExactMatch().evaluate(sample):
    ...     print(f"{r.metric}: {r.score:.2f} {r.success} - {r.reason}")
    Exact match: 1.00 True - answer equals the expected answer
    """

    name = "Exact match"
    aliases = ("Exact Match", "EM")
    description = "1 when the normalised answer equals the normalised expected answer."
    inputs = _ANSWER_VS_EXPECTED
    metrics = (
        MetricSpec(
            "Exact match", "normalised equality", threshold=0.5, primary=True, kind="pass_fail"
        ),
    )

    def score(self, sample: Sample) -> Mapping[str, Scored]:
        assert sample.answer is not None and sample.expected_answer is not None
        same = _normalized(sample.answer) == _normalized(sample.expected_answer)
        reason = "answer equals the expected answer" if same else "answer differs from expected"
        return {"Exact match": Scored(1.0 if same else 0.0, reason)}
