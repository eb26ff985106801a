"""ROUGE and BLEU reach their libraries' definitions by faster paths (evaluators.rouge,
evaluators.bleu): every score must be the library's own to the bit, computed here by the
library on the same pairs, and the stem cache that makes ROUGE fast must stay bounded."""

from __future__ import annotations

import random
from collections import Counter

import pytest
from nltk.translate.bleu_score import SmoothingFunction, sentence_bleu
from rouge_score import rouge_scorer
from rouge_score.rouge_scorer import _lcs_table
from rouge_score.tokenizers import DefaultTokenizer

from evalrunner.evaluators import Sample, resolve
from evalrunner.evaluators.bleu import sentence_bleus
from evalrunner.evaluators.lexical import _words, squad_normalize
from evalrunner.evaluators.rouge import (
    MAX_CACHED_WORD,
    STEM_CACHE_SIZE,
    StemmingTokenizer,
    lcs_length,
    rouge_token,
)

ROUGE_TYPES = {"ROUGE-1": "rouge1", "ROUGE-2": "rouge2", "ROUGE-L": "rougeL"}
BLEU_WEIGHTS = {
    "BLEU-1": (1.0,),
    "BLEU-2": (0.5, 0.5),
    "BLEU-3": (1 / 3, 1 / 3, 1 / 3),
    "BLEU-4": (0.25, 0.25, 0.25, 0.25),
}

# Words that exercise every branch a tokenizer or stemmer has: suffixes the Porter stemmer
# rewrites, words of 3 characters and fewer (never stemmed), digits, mixed case, accents and
# other scripts (dropped by rouge-score, kept by BLEU's \w+), apostrophes and hyphens.
VOCABULARY = (
    "the a an of to in is was be running runs ran runner generously generalization "
    "relational conditional rational valency hesitancy digitizer conformabli radicalli "
    "differentli vileli analogousli vietnamization predication operator feudalism "
    "decisiveness hopefulness callousness formaliti sensitiviti sensibiliti triplicate "
    "formative formalize electriciti electrical hopeful goodness revival allowance "
    "inference airliner gyroscopic adjustable defensible irritant replacement adjustment "
    "dependent adoption homologou communism activate angulariti homologous effective "
    "bowdlerize probate rate cease controll roll caresses ponies ties caress cats feed "
    "agreed plastered bled motoring sing conflated troubled sized hopping tanned falling "
    "hissing fizzed failing filing happy sky policy policies day days 42 2024 3.5 1,000 "
    "v2 gpt4 x86_64 O'Brien don't it's co-operate e-mail naïve café Straße ÉCOLE İstanbul "
    "ﬁnance résumé 東京 данные العربية 😀 ½ ² Ⅻ ... !!! ?? -- — «» “quoted” (paren) [x]"
).split()


def _text(rng: random.Random, n: int) -> str:
    separators = [" ", " ", " ", "  ", "\n", "\t", ", ", ". ", "-", "/", "'"]
    return "".join(rng.choice(VOCABULARY) + rng.choice(separators) for _ in range(n))


def corpus() -> list[tuple[str, str]]:
    """(expected answer, answer) pairs: random mixes of every length up to a few hundred
    words, repeats, and the edge cases by hand."""
    rng = random.Random(18)
    pairs = [
        ("", ""),
        ("The cat sat on the mat.", ""),
        ("", "The cat sat on the mat."),
        ("   \n\t ", "!!! ... ???"),
        ("东京 данные 😀", "东京 данные 😀"),  # nothing rouge-score keeps
        ("42", "42"),
        ("a", "a a a a a"),
        ("the the the the", "the the"),
        ("running runs ran", "runner running run"),
        ("Policies, policies; POLICIES!", "policy"),
        ("x86_64 v2 gpt4 1,000 3.5", "x86 64 v2 gpt 4 1 000 3 5"),
        ("naïve café Straße", "naive cafe strasse"),
        ("İstanbul ﬁnance", "istanbul finance"),
        (" ".join(["alpha beta"] * 150), " ".join(["beta alpha"] * 140)),  # long, repeated
    ]
    for _ in range(300):
        shared = _text(rng, rng.randrange(0, 40))
        pairs.append(
            (
                _text(rng, rng.randrange(0, 30)) + shared + _text(rng, rng.randrange(0, 10)),
                _text(rng, rng.randrange(0, 60)) + shared + _text(rng, rng.randrange(0, 40)),
            )
        )
    for _ in range(4):  # very long answers against a long expected answer
        pairs.append((_text(rng, 300), _text(rng, 600)))
    return pairs


CORPUS = corpus()


def test_the_corpus_reaches_the_cases_it_is_for() -> None:
    """A guard on the corpus itself: empty sides, long texts, and both full and partial
    overlap are in it, so the equalities below are not tested on easy pairs only."""
    reference = rouge_scorer.RougeScorer(["rougeL"], use_stemmer=True)
    f1s = [reference.score(t, p)["rougeL"].fmeasure for t, p in CORPUS]
    assert len(CORPUS) >= 300
    assert any(not t.strip() for t, _ in CORPUS) and any(not p for _, p in CORPUS)
    assert max(len(p.split()) for _, p in CORPUS) >= 400
    assert 1.0 in f1s and 0.0 in f1s and sum(0.1 < f < 0.9 for f in f1s) > 200


def test_tokens_are_rouge_scores_default_tokenizer_with_stemmer() -> None:
    library, ours = DefaultTokenizer(use_stemmer=True), StemmingTokenizer()
    for target, prediction in CORPUS:
        assert ours.tokenize(target) == library.tokenize(target)
        assert ours.tokenize(prediction) == library.tokenize(prediction)


def test_rouge_metric_scores_are_rouge_scores_bit_for_bit() -> None:
    library = rouge_scorer.RougeScorer(list(ROUGE_TYPES.values()), use_stemmer=True)
    evaluator = resolve("Rouge Metric")()
    for target, prediction in CORPUS:
        expected = library.score(target, prediction)
        sample = Sample(question="q", expected_answer=target, answer=prediction)
        results = evaluator.evaluate(sample)
        if not target.strip():  # no expected answer: skipped, as before
            assert {r.status for r in results} == {"skipped"}
            continue
        got = {r.metric: r.score for r in results}
        assert got == {m: expected[key].fmeasure for m, key in ROUGE_TYPES.items()}, (
            target,
            prediction,
        )
        for r in results:  # precision and recall are in the reason, from the same Score
            s = expected[ROUGE_TYPES[r.metric]]
            assert f"precision {s.precision:.3f}, recall {s.recall:.3f}" in r.reason


def test_the_tokenizer_plugged_into_rouge_scorer_changes_no_score() -> None:
    """The memoising tokenizer is a rouge-score Tokenizer: RougeScorer(tokenizer=...) with it
    gives every Score (precision, recall, F1) of the default one."""
    types = list(ROUGE_TYPES.values())
    library = rouge_scorer.RougeScorer(types, use_stemmer=True)
    plugged = rouge_scorer.RougeScorer(types, tokenizer=StemmingTokenizer())
    for target, prediction in CORPUS:
        assert plugged.score(target, prediction) == library.score(target, prediction)


def test_bit_parallel_lcs_is_the_length_of_rouge_scores_table() -> None:
    rng = random.Random(7)
    # small alphabets make long runs of repeats, the case a bit-parallel step can get wrong
    pairs = [
        (
            [rng.choice("abcd"[: rng.randrange(1, 5)]) for _ in range(rng.randrange(0, 70))],
            [rng.choice("abcde") for _ in range(rng.randrange(0, 70))],
        )
        for _ in range(1500)
    ]
    pairs += [(["x"] * 200, ["x"] * 150), ([], ["x"]), (["x"], [])]
    for a, b in pairs:
        assert lcs_length(a, b) == _lcs_table(a, b)[-1][-1], (a, b)


def test_bleu_scores_are_nltks_sentence_bleu_bit_for_bit() -> None:
    smoothing = SmoothingFunction().method1
    evaluator = resolve("BLEU")()
    scored = 0
    for reference_text, hypothesis_text in CORPUS:
        results = evaluator.evaluate(
            Sample(question="q", expected_answer=reference_text, answer=hypothesis_text)
        )
        reference = reference_text.casefold().split()
        hypothesis = hypothesis_text.casefold().split()
        library = [
            sentence_bleu([reference], hypothesis, weights=w, smoothing_function=smoothing)
            for w in BLEU_WEIGHTS.values()
        ]
        assert sentence_bleus(reference, hypothesis, list(BLEU_WEIGHTS.values()), smoothing) == (
            library
        )
        # the evaluator's own words (\w+ after casefold) against nltk on the same words
        words, expected_words = _words(hypothesis_text), _words(reference_text)
        if not reference_text.strip():  # no expected answer: skipped, as before
            assert {r.status for r in results} == {"skipped"}
            continue
        if not words:  # nltk is not asked: an answer without words scores 0
            assert {r.score for r in results} == {0.0}
            continue
        scored += 1
        assert {r.metric: r.score for r in results} == {
            metric: sentence_bleu([expected_words], words, weights=w, smoothing_function=smoothing)
            for metric, w in BLEU_WEIGHTS.items()
        }, (reference_text, hypothesis_text)
    assert scored > 250


@pytest.mark.parametrize(
    "weights",
    [[(1.0,)], [(0.25, 0.25, 0.25, 0.25), (1.0,)], [(0.1, 0.3, 0.5, 0.1), (0.2,) * 5]],
)
def test_sentence_bleus_takes_any_weights_as_nltk_does(weights) -> None:
    """Weights shorter or longer than four orders, in any order, still give nltk's values."""
    smoothing = SmoothingFunction().method1
    for reference_text, hypothesis_text in CORPUS[:80]:
        reference, hypothesis = reference_text.split(), hypothesis_text.split()
        assert sentence_bleus(reference, hypothesis, weights, smoothing) == [
            sentence_bleu([reference], hypothesis, weights=w, smoothing_function=smoothing)
            for w in weights
        ]


@pytest.mark.parametrize(
    "smoothing",
    [
        SmoothingFunction(epsilon=0.5).method1,
        SmoothingFunction(epsilon=0).method1,
        SmoothingFunction().method0,
        SmoothingFunction().method2,
        SmoothingFunction().method4,
        SmoothingFunction().method3,
    ],
    ids=["method1-epsilon-0.5", "method1-epsilon-0", "method0", "method2", "method4", "method3"],
)
@pytest.mark.filterwarnings("ignore:\\nThe hypothesis contains 0 counts:UserWarning")
def test_sentence_bleus_takes_any_smoothing_as_nltk_does(smoothing) -> None:
    """Method 1 is computed on the integer counts (any epsilon, 0 included: a zero precision
    then drops out of the sum as in nltk); any other smoothing gets nltk's Fractions."""
    weights = list(BLEU_WEIGHTS.values())
    for reference_text, hypothesis_text in CORPUS[:120]:
        reference, hypothesis = reference_text.split(), hypothesis_text.split()
        assert sentence_bleus(reference, hypothesis, weights, smoothing) == [
            sentence_bleu([reference], hypothesis, weights=w, smoothing_function=smoothing)
            for w in weights
        ], (reference_text, hypothesis_text)


def test_numbers_are_their_own_tokens_as_rouge_score_stems_them() -> None:
    """The tokenizer keeps a number without stemming it: rouge-score's stemmer leaves every
    number as it is (all of 0 .. 199,999, and longer ones), alone or among words."""
    stemmer = DefaultTokenizer(use_stemmer=True)
    rng = random.Random(18)
    numbers = [str(i) for i in range(200_000)]
    numbers += ["".join(rng.choices("0123456789", k=rng.randint(6, 80))) for _ in range(2_000)]
    for start in range(0, len(numbers), 500):
        text = " ".join(numbers[start : start + 500])
        assert StemmingTokenizer().tokenize(text) == stemmer.tokenize(text) == text.split()
    mixed = "paid 1999 dollars in 2024, 3.5 days, 1,000 items, v2 x86_64 0042 rates"
    assert StemmingTokenizer().tokenize(mixed) == stemmer.tokenize(mixed)


def test_the_stem_cache_is_bounded_and_stays_correct_when_full() -> None:
    """Filled past its size with distinct words, the cache holds STEM_CACHE_SIZE entries and
    no more, and a word evicted long ago is stemmed again to the same token."""
    stemmer = DefaultTokenizer(use_stemmer=True)
    rouge_token.cache_clear()
    try:
        assert rouge_token("generously") == stemmer.tokenize("generously")[0]
        for i in range(STEM_CACHE_SIZE + 2_000):
            rouge_token(f"word{i}ing")
        info = rouge_token.cache_info()
        assert info.maxsize == STEM_CACHE_SIZE
        assert info.currsize == STEM_CACHE_SIZE
        assert rouge_token("generously") == stemmer.tokenize("generously")[0]
        assert rouge_token.cache_info().misses == info.misses + 1  # evicted, stemmed again
        assert rouge_token("word5ing") == stemmer.tokenize("word5ing")[0]
    finally:
        rouge_token.cache_clear()


def test_token_f1_and_exact_match_keep_their_squad_definitions() -> None:
    """Token F1 and Exact match share a normalisation cache and count overlap without
    Counter's ``&``: on the corpus, both still equal the SQuAD-style definitions written out
    here (F1 over the normalised tokens' multiset intersection; equality of the normalised
    texts), whichever of the two evaluators runs first."""

    def f1(answer: str, expected: str) -> float:
        predicted, gold = squad_normalize(answer).split(), squad_normalize(expected).split()
        common = sum((Counter(predicted) & Counter(gold)).values())
        if common == 0:
            return 0.0
        precision, recall = common / len(predicted), common / len(gold)
        return 2 * precision * recall / (precision + recall)

    token_f1, exact = resolve("Token F1")(), resolve("Exact match")()
    matches = 0
    for i, (expected, answer) in enumerate(CORPUS + [(e, e.upper() + "!") for e, _ in CORPUS]):
        if not expected.strip():
            continue
        sample = Sample(question="q", expected_answer=expected, answer=answer)
        first, second = (token_f1, exact) if i % 2 else (exact, token_f1)
        scores = {r.metric: r.score for e in (first, second) for r in e.evaluate(sample)}
        same = squad_normalize(answer) == squad_normalize(expected)
        assert scores == {"Token F1": f1(answer, expected), "Exact match": float(same)}
        matches += same
    assert matches > 100


def test_long_words_are_tokenized_as_rouge_score_does_but_never_cached() -> None:
    """A 'word' longer than MAX_CACHED_WORD (a hex digest, a base64 run) is stemmed without
    entering the cache, so the cache's memory is bounded in bytes too."""
    library = DefaultTokenizer(use_stemmer=True)
    long_words = [f"{i:04x}" * 20 + "ing" for i in range(200)] + ["a" * 5000 + "ational"]
    text = " ".join([*long_words, "running", "generously"])
    assert all(len(w) > MAX_CACHED_WORD for w in long_words)
    rouge_token.cache_clear()
    try:
        assert StemmingTokenizer().tokenize(text) == library.tokenize(text)
        assert rouge_token.cache_info().currsize == 2  # running, generously
    finally:
        rouge_token.cache_clear()


def test_the_normalisation_cache_keeps_few_and_short_texts() -> None:
    """Token F1 / Exact match's shared cache holds at most 32 texts and never one over 4,096
    characters, however many and however long the answers are; scores are unchanged."""
    from evalrunner.evaluators import lexical

    cache = lexical._normalized_cached
    cache.cache_clear()
    long_answer = "The answer, " + "word " * 2000
    assert lexical._normalized(long_answer) == squad_normalize(long_answer)
    assert cache.cache_info().misses == 0 and cache.cache_info().currsize == 0
    token_f1 = resolve("Token F1")()
    for i in range(100):
        sample = Sample(question="q", expected_answer=f"answer {i}", answer=f"The answer {i}!")
        assert [r.score for r in token_f1.evaluate(sample)] == [1.0]
    assert cache.cache_info().maxsize == 32 and cache.cache_info().currsize == 32
    cache.cache_clear()
