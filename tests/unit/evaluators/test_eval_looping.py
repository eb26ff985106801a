"""Looping detection: unique sentences, longest repeated substring, compression ratio."""

import random
import zlib
from collections import Counter

import pytest

from evalrunner.evaluators import Sample, resolve
from evalrunner.evaluators.looping import longest_repeat, sentences
from tests.support.scaling import assert_linear, quarter

NORMAL = (
    "Employees get 25 days of paid annual leave per calendar year. Up to five unused days "
    "may be carried over into the next year, subject to manager approval. Requests should "
    "be made in the HR portal at least two weeks in advance. Public holidays are not "
    "deducted from the allowance."
)
LOOP = "I will check the policy for you now. " * 12


def run(answer):
    s = Sample(question="q", answer=answer)
    return {r.metric: r for r in resolve("Looping detection")().evaluate(s)}


def test_normal_text_passes_every_metric():
    r = run(NORMAL)
    assert r["Unique sentences"].score == 1.0
    assert r["Longest repeated substring"].score < 0.1
    assert 0.5 < r["Compression ratio"].score < 0.8
    assert all(x.success for x in r.values())


def test_a_loop_fails_every_metric():
    r = run(LOOP)
    assert r["Unique sentences"].score == pytest.approx(1 / 12)
    assert '"i will check the policy for you now." appears 12 times' in r["Unique sentences"].reason
    assert r["Longest repeated substring"].score > 0.9
    assert r["Compression ratio"].score < 0.3
    assert not any(x.success for x in r.values())


def test_unique_sentences_ignores_short_ones_and_folds_case_and_spacing():
    text = "Yes. Yes. Yes. The answer is five days.\nthe  answer is FIVE days. Another point here."
    assert sentences(text) == [
        "the answer is five days.",
        "the answer is five days.",
        "another point here.",
    ]
    r = run(text)["Unique sentences"]
    assert r.score == pytest.approx(2 / 3) and r.success is False
    assert run("Ok. Yes. No.")["Unique sentences"].score == 1.0


def test_longest_repeated_substring_values():
    # "abcd" twice covers the text
    assert run("abcdabcd")["Longest repeated substring"].score == 1.0
    # "ana" occurs at 1 and 3, overlapping: one non-overlapping copy, 3 / 6
    r = run("banana")["Longest repeated substring"]
    assert r.score == 0.5
    assert r.reason == '3 characters × 1 occurrences (2 overlapping) / 6 characters: "ana"'
    # "xy" three times, non-overlapping: 2 * 3 / 9
    assert run("xyAxyBxyC")["Longest repeated substring"].score == pytest.approx(6 / 9)
    assert run("abcdef")["Longest repeated substring"].score == 0.0


def brute_force(text):
    best, occurrences = 0, {}
    for length in range(1, len(text)):
        counts = Counter(text[i : i + length] for i in range(len(text) - length + 1))
        repeated = {s: c for s, c in counts.items() if c > 1}
        if not repeated:
            break
        best, occurrences = length, repeated
    return best, occurrences


@pytest.mark.parametrize(
    "alphabet",
    ["ab", "abc ", "ab€é ", "a\0b", "xé\0", "".join(chr(0x4E00 + i) for i in range(300))],
    ids=["binary", "ascii", "some-non-ascii", "nul", "nul-non-ascii", "cjk-300-symbols"],
)
def test_longest_repeat_matches_brute_force(alphabet):
    rng = random.Random(alphabet)
    for _ in range(150):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 40)))
        length, positions = longest_repeat(text)
        expected, occurrences = brute_force(text)
        assert length == expected, text
        if length:
            found = text[positions[0] : positions[0] + length]
            assert all(text[p : p + length] == found for p in positions)
            assert len(positions) == occurrences[found] == max(occurrences.values())


def test_longest_repeat_with_more_than_65535_symbols():
    text = "".join(chr(0x10000 + i) for i in range(70_000)) + chr(0x10005) + chr(0x10006)
    assert longest_repeat(text) == (2, [5, 70_000])


@pytest.mark.parametrize(
    "text",
    [
        " ".join(random.Random(3).choice(NORMAL.split()) for _ in range(3400))[:20_000],
        ("This is a sentence that loops. " * 700)[:20_000],
        "a" * 20_000,
    ],
    ids=["prose", "loop", "one-letter"],
)
def test_longest_repeat_takes_linear_time_on_20k_characters(text):
    """4x the text costs about 4x the CPU time (tests/support/scaling.py), not a wall-clock
    bound that a loaded machine breaks."""
    assert_linear(longest_repeat, quarter(text), text)
    length, positions = longest_repeat(text)
    assert length > 0 and len(positions) >= 2


def test_compression_ratio_values():
    raw = NORMAL.encode()
    expected = len(zlib.compress(raw, 9)) / len(raw)
    r = run(NORMAL)["Compression ratio"]
    assert r.score == pytest.approx(expected)
    assert r.reason == f"{len(raw)} bytes compress to {len(zlib.compress(raw, 9))}"
    short = run("Hi there")["Compression ratio"]
    assert short.score == 1.0 and "capped at 1" in short.reason
    assert run(LOOP)["Compression ratio"].score == pytest.approx(
        len(zlib.compress(LOOP.strip().encode(), 9)) / len(LOOP.strip().encode())
    )


def test_empty_answer_does_not_loop():
    for answer in ("", "   \n"):
        r = run(answer)
        assert {m: x.score for m, x in r.items()} == {
            "Unique sentences": 1.0,
            "Longest repeated substring": 0.0,
            "Compression ratio": 1.0,
        }
        assert all(x.success for x in r.values())
        assert "empty" in r["Unique sentences"].reason


def test_lone_surrogates_and_astral_characters_do_not_crash():
    for text in ["ab\ud800ab\ud800", "x😀y😀z😀y😀", "a\0\ud800a\0\ud800"]:
        r = run(text)
        assert all(x.status == "scored" for x in r.values()), r
    assert longest_repeat("ab\ud800ab\ud800") == (3, [0, 3])
    assert longest_repeat("x😀y😀z😀y😀") == (3, [1, 5])  # "😀y😀"


def test_skipped_without_answer():
    s = Sample(question="q", answer=None)
    r = resolve("Looping")().evaluate(s)
    assert all(x.status == "skipped" for x in r)
