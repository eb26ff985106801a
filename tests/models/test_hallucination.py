"""Hallucination (cross-encoder): the score is the model's consistency output for (context,
answer), read through the real loading code of tiny models; expected values are computed
here with sentence-transformers directly, not through the evaluator's scorer."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from sentence_transformers import CrossEncoder

from evalrunner.evaluators.base import Sample
from evalrunner.evaluators.hallucination import METRIC, Hallucination
from evalrunner.evaluators.registry import available, resolve
from evalrunner.models import ModelHub, ModelRole, default_model
from tests.models import tiny

ANSWER = "Paris is the capital of France."
CHUNKS = ["The cat sat on the mat.", "Paris is the capital city of France.", "The sun is blue."]


def _sharp_cross_encoder(folder: Path, labels: list[str], seed: int) -> Path:
    """A tiny cross-encoder with large random weights, so different pairs get clearly
    different scores (the shared tiny models score every pair about alike)."""
    import torch
    from transformers import BertForSequenceClassification

    torch.manual_seed(seed)
    config = tiny._bert_config(
        num_labels=len(labels),
        id2label=dict(enumerate(labels)),
        label2id={label: i for i, label in enumerate(labels)},
        initializer_range=0.5,
    )
    tiny._tokenizer(folder)
    BertForSequenceClassification(config).save_pretrained(str(folder))
    return folder


@pytest.fixture(scope="module")
def extra_models(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("hallucination-models")
    return {
        "sharp": _sharp_cross_encoder(root / "sharp", ["LABEL_0"], seed=7),
        "sentiment": _sharp_cross_encoder(root / "sentiment", ["negative", "positive"], seed=7),
    }


def _evaluator(model: Path, **options: object) -> Hallucination:
    ev = Hallucination(options={"model": str(model), **options}, models=ModelHub(device="cpu"))
    return ev


def _expected(model: Path, pairs: list[tuple[str, str]], column: int = 0) -> np.ndarray:
    """The model's own scores, straight from sentence-transformers."""
    ce = CrossEncoder(str(model), device="cpu", local_files_only=True)
    if ce.num_labels == 1:
        return np.asarray(ce.predict(pairs)).reshape(-1)
    return np.asarray(ce.predict(pairs, apply_softmax=True))[:, column]


def _scored(results) -> list[float]:
    assert all(r[0].status == "scored" for r in results), [r[0].reason for r in results]
    return [r[0].score for r in results]


def test_declaration_is_unique_and_the_judge_variant_is_untouched() -> None:
    assert resolve("hallucination") is Hallucination
    assert resolve("Hallucination (judge)").name == "Hallucination (judge)"
    spec = Hallucination.primary_metric()
    assert (spec.name, spec.threshold, spec.higher_is_better) == (METRIC, 0.5, True)
    others = [m.name for c in available().values() if c is not Hallucination for m in c.metrics]
    assert METRIC not in others
    assert Hallucination().model_name() == default_model(ModelRole.HALLUCINATION)


def test_one_output_model_scores_the_joined_context(tiny_models) -> None:
    model = tiny_models["cross_encoder"]
    samples = [
        Sample(question="q", answer=ANSWER, contexts=CHUNKS),
        Sample(question="q", answer="The cat sat.", contexts=["", CHUNKS[0], "  "]),
    ]
    results = _evaluator(model).evaluate_batch(samples)
    expected = _expected(model, [("\n\n".join(CHUNKS), ANSWER), (CHUNKS[0], "The cat sat.")])
    assert _scored(results) == pytest.approx(expected.tolist(), abs=1e-6)
    assert results[0][0].success is bool(expected[0] >= 0.5)
    assert "with the 3 retrieved chunk(s) joined" in results[0][0].reason
    assert "with the 1 retrieved chunk(s) joined" in results[1][0].reason
    assert f"{expected[0]:.2f}" in results[0][0].reason


def test_multi_label_model_gives_the_entailment_probability(tiny_models) -> None:
    model = tiny_models["nli"]  # labels: contradiction, entailment, neutral
    samples = [Sample(question="q", answer=ANSWER, contexts=CHUNKS)]
    pairs = [("\n\n".join(CHUNKS), ANSWER)]
    value = _scored(_evaluator(model).evaluate_batch(samples))[0]
    assert value == pytest.approx(float(_expected(model, pairs, column=1)[0]), abs=1e-7)
    for other in (0, 2):  # not the contradiction or neutral probability
        assert value != pytest.approx(float(_expected(model, pairs, column=other)[0]), abs=1e-7)


def test_multi_label_model_without_a_consistency_label_is_an_error(extra_models) -> None:
    results = _evaluator(extra_models["sentiment"]).evaluate_batch(
        [Sample(question="q", answer=ANSWER, contexts=CHUNKS)]
    )
    assert results[0][0].status == "error"
    assert "no label consistent/entail/support" in results[0][0].reason
    assert "negative, positive" in results[0][0].reason


def test_per_chunk_keeps_the_best_chunk_and_names_it(extra_models) -> None:
    model = extra_models["sharp"]
    contexts = ["   ", *CHUNKS]  # a blank chunk first: chunk numbers stay the retriever's
    ev = _evaluator(model, per_chunk=True)
    results = ev.evaluate_batch([Sample(question="q", answer=ANSWER, contexts=contexts)])
    each = _expected(model, [(c, ANSWER) for c in CHUNKS])
    assert each.max() - each.min() > 0.05  # the chunks really score differently
    assert _scored(results) == pytest.approx([float(each.max())], abs=1e-6)
    best = int(each.argmax()) + 2  # 1-based, after the blank chunk
    assert f"best supported by chunk {best} of 4" in results[0][0].reason
    joined = _evaluator(model).evaluate_batch(
        [Sample(question="q", answer=ANSWER, contexts=contexts)]
    )
    assert _scored(joined)[0] == pytest.approx(
        float(_expected(model, [("\n\n".join(CHUNKS), ANSWER)])[0]), abs=1e-6
    )


def test_a_context_longer_than_the_window_is_reported(tiny_models) -> None:
    model = tiny_models["cross_encoder"]  # a 128-token window
    long_chunk = "the cat sat on the mat . " * 40
    sample = Sample(question="q", answer=ANSWER, contexts=[long_chunk, CHUNKS[1]])
    short = Sample(question="q", answer=ANSWER, contexts=CHUNKS)
    joined = _evaluator(model).evaluate_batch([sample, short])
    assert "only part of the context (consider the option per_chunk)" in joined[0][0].reason
    assert "window" not in joined[1][0].reason
    split = _evaluator(model, per_chunk=True).evaluate_batch([sample])
    assert "1 chunk(s) exceed the model's window" in split[0][0].reason


def test_empty_answer_and_blank_context_are_skipped(tiny_models) -> None:
    ev = _evaluator(tiny_models["cross_encoder"])
    results = ev.evaluate_batch(
        [
            Sample(question="q", answer="   ", contexts=CHUNKS),
            Sample(question="q", answer=ANSWER, contexts=[" ", "\n"]),
            Sample(question="q", answer=ANSWER, contexts=CHUNKS),
        ]
    )
    assert results[0][0].status == "skipped"
    assert "the answer is empty" in results[0][0].reason
    assert results[1][0].status == "skipped"
    assert "the retrieved context has no text" in results[1][0].reason
    assert results[2][0].status == "scored"


def test_missing_model_skips_every_case_and_is_reported_once() -> None:
    ev = Hallucination(models=ModelHub(device="cpu"))
    samples = [Sample(question="q", answer=ANSWER, contexts=CHUNKS)] * 3
    results = ev.evaluate_batch(samples) + ev.evaluate_batch(samples)
    name = default_model(ModelRole.HALLUCINATION)
    assert all(r[0].status == "skipped" and name in r[0].reason for r in results)
    notices = ev.hub.notices()
    assert len(notices) == 1
    assert notices[0]["model"] == name
    assert notices[0]["evaluators"] == ["Hallucination"]


@pytest.mark.parametrize("per_chunk", [False, True])
def test_one_model_call_per_batch_and_repeats_computed_once(
    tiny_models, count_calls, per_chunk: bool
) -> None:
    model = tiny_models["cross_encoder"]
    ev = _evaluator(model, per_chunk=per_chunk)
    scorer = ev.hub.cross_encoder(str(model), ModelRole.HALLUCINATION)
    calls = count_calls(scorer, "scores")
    same = Sample(question="q", answer=ANSWER, contexts=CHUNKS)
    other = Sample(question="q2", answer="The cat sat.", contexts=CHUNKS[:2])
    results = ev.evaluate_batch([same, other, same])
    assert len(calls) == 1
    assert _scored(results)[0] == _scored(results)[2]
    counters = scorer.counters
    if per_chunk:  # 3 + 2 + 3 pairs asked; 3 + 2 distinct
        assert (counters.requested, counters.computed, counters.batches) == (8, 5, 1)
    else:
        assert (counters.requested, counters.computed, counters.batches) == (3, 2, 1)
