"""Lexical evaluators against hand-computed values, skips, thresholds and direction."""

import math

import pytest

from evalrunner.errors import ConfigError
from evalrunner.evaluators import Sample, resolve
from evalrunner.evaluators.lexical import squad_normalize


def sample(answer, expected="The cat sat on the mat."):
    return Sample(question="q", expected_answer=expected, answer=answer)


def scores(name, s, **thresholds):
    return {r.metric: r for r in resolve(name)(thresholds).evaluate(s)}


def test_rouge_identical_is_one_and_disjoint_is_zero():
    same = scores("Rouge Metric", sample("The cat sat on the mat."))
    assert all(math.isclose(r.score, 1.0) for r in same.values())
    assert all(r.success for r in same.values())
    none = scores("Rouge Metric", sample("Dogs bark loudly."))
    assert all(r.score == 0.0 and r.success is False for r in none.values())


def test_rouge_uses_stemming_and_reports_precision_recall():
    r = scores("Rouge Metric", sample("cats sitting", "cat sits"))["ROUGE-1"]
    assert math.isclose(r.score, 1.0)  # porter stemming: cats->cat, sitting/sits->sit
    assert "precision" in r.reason and "recall" in r.reason


def test_rouge_l_value():
    # LCS of "a b c d" vs "a c d e" is "a c d": P = R = 3/4
    r = scores("Rouge Metric", sample("alpha beta gamma delta", "alpha gamma delta epsilon"))
    assert math.isclose(r["ROUGE-L"].score, 0.75)
    assert r["ROUGE-L"].success is True  # default threshold 0.75


def test_threshold_override_by_metric_and_by_evaluator_name():
    s = sample("alpha beta gamma delta", "alpha gamma delta epsilon")
    assert scores("Rouge Metric", s, **{"ROUGE-L": 0.8})["ROUGE-L"].success is False
    assert scores("Rouge Metric", s, **{"Rouge Metric": 0.8})["ROUGE-L"].success is False


def test_bleu_identical_and_brevity():
    same = scores("BLEU", sample("the cat sat on the mat"))
    assert math.isclose(same["BLEU-4"].score, 1.0)
    short = scores("BLEU", sample("the cat"))
    # precision 1 but brevity penalty exp(1 - 6/2)
    assert math.isclose(short["BLEU-1"].score, math.exp(1 - 6 / 2), rel_tol=1e-6)
    assert 0 < short["BLEU-4"].score < short["BLEU-1"].score  # smoothed, not flattened to 0


def test_token_f1_squad_style():
    r = scores("Token F1", sample("The cat was on a mat", "cat sat on the mat"))["Token F1"]
    # normalised: [cat, was, on, mat] vs [cat, sat, on, mat] -> 3 common, P=R=3/4
    assert math.isclose(r.score, 0.75)


def test_exact_match_normalises():
    assert scores("Exact match", sample("the Cat sat, on the mat!"))["Exact match"].score == 1.0
    r = scores("Exact match", sample("a dog"))["Exact match"]
    assert r.score == 0.0 and r.success is False and r.threshold == 0.5


def test_missing_expected_answer_is_skipped_not_zero():
    for name in ("Rouge Metric", "BLEU", "Token F1", "Exact match"):
        for r in resolve(name)().evaluate(Sample(question="q", answer="x")):
            assert r.status == "skipped" and r.score is None and r.success is None
            assert "expected_answer column" in r.reason


@pytest.mark.parametrize("name", ["Rouge Metric", "BLEU", "Token F1", "Exact match"])
def test_empty_answer_scores_zero_not_skipped(name):
    # An empty answer is a real (bad) answer; only a missing one is skipped.
    for r in resolve(name)().evaluate(Sample(question="q", expected_answer="x y", answer="")):
        assert r.status == "scored" and r.score == 0.0 and r.success is False


def test_evaluator_exception_becomes_error_result(monkeypatch):
    cls = resolve("Token F1")
    monkeypatch.setattr(cls, "score", lambda self, s: 1 / 0)
    (r,) = cls().evaluate(sample("x"))
    assert r.status == "error" and "ZeroDivisionError" in r.reason


def test_nan_score_is_an_error_never_nan(monkeypatch):
    from evalrunner.evaluators import Scored

    cls = resolve("Token F1")
    monkeypatch.setattr(cls, "score", lambda self, s: {"Token F1": Scored(float("nan"), "?")})
    (r,) = cls().evaluate(sample("x"))
    assert r.status == "error" and r.score is None


def test_squad_normalize():
    assert squad_normalize("The  Quick, brown fox!") == "quick brown fox"


def test_resolve_forgives_case_and_separators():
    assert resolve("rouge_metric").name == "Rouge Metric"
    assert resolve("token-f1").name == "Token F1"
    with pytest.raises(ConfigError, match="is a metric of the evaluator 'BLEU'"):
        resolve("BLEU-2")
