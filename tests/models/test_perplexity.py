"""Perplexity: the batched, padded value equals transformers' own loss on each text alone,
truncation to the model's context, one call per batch, empty answers, a NaN from the model
and a missing model."""

from __future__ import annotations

import math

import pytest
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from evalrunner.evaluators.base import Sample
from evalrunner.evaluators.perplexity import Perplexity
from evalrunner.evaluators.registry import resolve
from evalrunner.models import ModelHub
from evalrunner.models.scorers import CausalLM

# Differently sized, so the short ones are padded in the batch.
TEXTS = [
    "Paris",
    "The cat sat on the mat.",
    "hate love stupid idiot kill good bad great terrible sun moon blue sky water fire",
    "a b",
]


def by_metric(results):
    return [{r.metric: r for r in case} for case in results]


def evaluator(model: str, hub: ModelHub | None = None, **kwargs) -> Perplexity:
    ev = Perplexity(options={"model": model}, **kwargs, models=hub or ModelHub(device="cpu"))
    return ev


def answers(*texts: str) -> list[Sample]:
    return [Sample(question="q", answer=t) for t in texts]


@pytest.fixture(scope="module")
def gpt2(tiny_models):
    folder = str(tiny_models["gpt2"])
    model = AutoModelForCausalLM.from_pretrained(folder, local_files_only=True).eval()
    return model, AutoTokenizer.from_pretrained(folder, local_files_only=True)


def alone(gpt2, text: str, max_tokens: int | None = None) -> float:
    """exp of transformers' own mean loss on BOS + text, one text at a time, no padding."""
    model, tokenizer = gpt2
    ids = tokenizer(tokenizer.bos_token + text, return_tensors="pt").input_ids[:, :max_tokens]
    with torch.no_grad():
        return math.exp(float(model(ids, labels=ids).loss))


def padded_loss_counted(gpt2, texts: list[str], index: int) -> float:
    """What a computation that forgot to mask the padding would give for texts[index]."""
    model, tokenizer = gpt2
    tokenizer.pad_token = tokenizer.eos_token
    enc = tokenizer([tokenizer.bos_token + t for t in texts], return_tensors="pt", padding=True)
    with torch.no_grad():
        ids = enc.input_ids[index : index + 1]
        return math.exp(float(model(ids, labels=ids).loss))


def test_batched_perplexity_equals_each_text_scored_alone(tiny_models, gpt2):
    got = by_metric(evaluator(str(tiny_models["gpt2"])).evaluate_batch(answers(*TEXTS)))
    for text, case in zip(TEXTS, got, strict=True):
        result = case["Perplexity"]
        assert result.status == "scored"
        assert result.score == pytest.approx(alone(gpt2, text), rel=1e-3)
        assert f"perplexity {result.score:.1f} over " in result.reason
    # The check can tell: counting the padding would move the shortest text's score by >5%.
    leaky = padded_loss_counted(gpt2, TEXTS, 0)
    assert abs(leaky - got[0]["Perplexity"].score) / got[0]["Perplexity"].score > 0.05
    assert len({round(c["Perplexity"].score, 3) for c in got}) == len(TEXTS)


def test_surrounding_whitespace_is_not_scored(tiny_models, gpt2):
    (case,) = by_metric(evaluator(str(tiny_models["gpt2"])).evaluate_batch(answers("  Paris\n")))
    assert case["Perplexity"].score == pytest.approx(alone(gpt2, "Paris"), rel=1e-3)


def test_a_long_answer_is_scored_on_what_fits_and_says_so(tiny_models, gpt2):
    text = " ".join(["the cat sat on the mat ."] * 20)  # well over the tiny model's 64 positions
    (case,) = by_metric(evaluator(str(tiny_models["gpt2"])).evaluate_batch(answers(text)))
    result = case["Perplexity"]
    assert result.score == pytest.approx(alone(gpt2, text, max_tokens=64), rel=1e-3)
    n = len(gpt2[1](text).input_ids)
    assert f"over the first 63 of {n} tokens" in result.reason


def test_lower_is_better_and_the_threshold_applies(tiny_models):
    # A random tiny model is about as perplexed as a uniform guess over its ~400 tokens.
    (default,) = by_metric(evaluator(str(tiny_models["gpt2"])).evaluate_batch(answers("Paris")))
    assert default["Perplexity"].score > 100 and default["Perplexity"].success is False
    lenient = evaluator(str(tiny_models["gpt2"]), thresholds={"Perplexity": 1000})
    (case,) = by_metric(lenient.evaluate_batch(answers("Paris")))
    assert case["Perplexity"].success is True and case["Perplexity"].threshold == 1000
    (spec,) = Perplexity.metrics
    assert not spec.higher_is_better and spec.low == 1.0 and math.isfinite(spec.high)


def test_one_call_for_the_batch_and_each_distinct_answer_once(tiny_models):
    hub = ModelHub(device="cpu")
    ev = evaluator(str(tiny_models["gpt2"]), hub)
    results = by_metric(ev.evaluate_batch(answers(*TEXTS, *TEXTS, "Paris ")))
    counters = hub.causal_lm(str(tiny_models["gpt2"])).counters
    assert (counters.requested, counters.computed, counters.batches) == (4, 4, 1)
    scores = [c["Perplexity"].score for c in results]
    assert scores[:4] == scores[4:8] and scores[8] == scores[0]


def test_an_empty_answer_is_skipped_without_the_model(tiny_models):
    hub = ModelHub(device="cpu")
    results = by_metric(evaluator(str(tiny_models["gpt2"]), hub).evaluate_batch(answers("", "\n")))
    for case in results:
        assert case["Perplexity"].status == "skipped"
        assert case["Perplexity"].reason == (
            "skipped: the answer is empty: perplexity is undefined"
        )
    assert hub.causal_lm(str(tiny_models["gpt2"])).counters.requested == 0


def test_a_nan_from_the_model_is_an_error_for_that_answer_only(tiny_models, monkeypatch):
    real = CausalLM.perplexity

    def broken(self, texts):
        return [
            math.nan if t == "The cat sat on the mat." else v
            for t, v in zip(texts, real(self, texts), strict=True)
        ]

    monkeypatch.setattr(CausalLM, "perplexity", broken)
    results = by_metric(evaluator(str(tiny_models["gpt2"])).evaluate_batch(answers(*TEXTS[:2])))
    ok, bad = (c["Perplexity"] for c in results)
    assert ok.status == "scored" and math.isfinite(ok.score)
    assert bad.status == "error" and "perplexity of nan" in bad.reason


def test_a_missing_model_skips_every_case_with_one_notice():
    ev = Perplexity(models=ModelHub(device="cpu"))  # the default model: distilbert/distilgpt2
    results = by_metric(ev.evaluate_batch(answers("Paris", "Lyon")))
    for case in results:
        assert case["Perplexity"].status == "skipped"
        assert "'distilbert/distilgpt2'" in case["Perplexity"].reason
    (notice,) = ev.hub.notices()
    assert notice["model"] == "distilbert/distilgpt2" and notice["evaluators"] == ["Perplexity"]


def test_resolves_by_name():
    assert resolve("Perplexity") is Perplexity
