"""BERT Score: bert-score's numbers on a tiny BERT, F1 from precision and recall, the
threshold against MiniLM paraphrases and unrelated answers, one call per batch, empty
answers and a missing model."""

from __future__ import annotations

import pytest
from bert_score import BERTScorer
from pydantic import ValidationError

from evalrunner.evaluators.base import Sample
from evalrunner.evaluators.bertscore import BERTScore
from evalrunner.evaluators.registry import resolve
from evalrunner.models import PACKAGED_MINILM, ModelHub

P, R, F = "BERTScore precision", "BERTScore recall", "BERTScore F1"
PAIRS = [
    ("the cat sat on the mat .", "a cat sat on a mat ."),
    ("paris is the capital of france", "the capital city of france is paris"),
    ("i love the sun and the moon", "the employee policy is bad"),
]


def by_metric(results):
    return [{r.metric: r for r in case} for case in results]


def evaluator(model: str, hub: ModelHub | None = None, **options) -> BERTScore:
    ev = BERTScore(options={"model": model, **options}, models=hub or ModelHub(device="cpu"))
    return ev


def samples(pairs) -> list[Sample]:
    return [Sample(question="q", answer=a, expected_answer=e) for a, e in pairs]


# --------------------------------------------------------------------------- tiny BERT: formula


@pytest.mark.parametrize("folder", ["_raw", "."], ids=["hf-bert-folder", "st-folder"])
def test_scores_are_bert_scores_and_f1_is_their_harmonic_mean(tiny_models, folder):
    path = tiny_models["encoder"] / folder
    got = by_metric(evaluator(str(path)).evaluate_batch(samples(PAIRS)))

    # Independently: the library on the plain BERT folder, last (2nd) layer.
    reference = BERTScorer(model_type=str(tiny_models["encoder"] / "_raw"), num_layers=2)
    p, r, f = (t.numpy() for t in reference.score([a for a, _ in PAIRS], [e for _, e in PAIRS]))
    assert ((p > 0) & (p < 1) & (r > 0) & (r < 1)).all()  # nothing clipped in this example
    for case, pi, ri, fi in zip(got, p, r, f, strict=True):
        prec, rec, f1 = case[P].score, case[R].score, case[F].score
        assert prec == pytest.approx(float(pi), abs=1e-6)
        assert rec == pytest.approx(float(ri), abs=1e-6)
        assert f1 == pytest.approx(2 * prec * rec / (prec + rec), abs=1e-9)
        assert f1 == pytest.approx(float(fi), abs=1e-6)
        assert all(m.status == "scored" for m in case.values())
        assert f"precision {prec:.2f}, recall {rec:.2f}" in case[F].reason
    # the pairs really differ, so a mix-up of their order would show
    assert len({round(c[F].score, 4) for c in got}) == 3


def test_num_layers_option_picks_the_layer(tiny_models):
    raw = str(tiny_models["encoder"] / "_raw")
    first = by_metric(evaluator(raw, num_layers=1).evaluate_batch(samples(PAIRS[:1])))[0]
    last = by_metric(evaluator(raw).evaluate_batch(samples(PAIRS[:1])))[0]
    reference = BERTScorer(model_type=raw, num_layers=1)
    _, _, f = reference.score([PAIRS[0][0]], [PAIRS[0][1]])
    assert first[F].score == pytest.approx(float(f[0]), abs=1e-6)
    assert abs(first[F].score - last[F].score) > 1e-4


def test_options_are_validated():
    with pytest.raises(ValidationError):
        BERTScore(options={"num_layers": 0})
    with pytest.raises(ValidationError):
        BERTScore(options={"layers": 3})


# --------------------------------------------------------------------------- MiniLM: quality


def test_a_paraphrase_passes_and_an_unrelated_answer_fails(minilm_hub):
    ev = evaluator(PACKAGED_MINILM, minilm_hub)
    expected = "Each employee is entitled to 25 days of paid vacation annually."
    para, unrelated = by_metric(
        ev.evaluate_batch(
            samples(
                [
                    ("Employees get 25 days of annual leave per year.", expected),
                    ("The weather is sunny today.", expected),
                ]
            )
        )
    )
    assert para[F].score > 0.6 > 0.3 > unrelated[F].score  # measured: 0.73 against 0.13
    assert para[F].success is True and unrelated[F].success is False
    assert all(para[m].success for m in (P, R)) and not any(unrelated[m].success for m in (P, R))
    assert PACKAGED_MINILM in para[F].reason


def test_a_partial_answer_loses_recall_not_precision(minilm_hub):
    ev = evaluator(PACKAGED_MINILM, minilm_hub)
    expected = "Employees get 25 days of annual leave, and unused days can be carried over."
    (case,) = by_metric(ev.evaluate_batch(samples([("Employees get 25 days of leave.", expected)])))
    assert case[P].score > case[R].score
    assert "the expected answer has content the answer lacks" in case[F].reason


# --------------------------------------------------------------------------- batching and skips


def test_one_call_for_the_batch_and_repeated_pairs_scored_once(tiny_models):
    hub = ModelHub(device="cpu")
    raw = str(tiny_models["encoder"] / "_raw")
    ev = evaluator(raw, hub)
    batch = samples(PAIRS * 3 + [("", "the cat"), ("  ", "the cat")])
    results = by_metric(ev.evaluate_batch(batch))
    counters = hub.bertscore(raw).counters
    assert counters.batches == 1
    assert counters.requested == 3  # 9 scored samples, 3 distinct pairs; empties never sent
    assert [c[F].score for c in results[:3]] == [c[F].score for c in results[3:6]]
    assert [c[F].score for c in results[:3]] == [c[F].score for c in results[6:9]]


def test_an_empty_answer_scores_zero_without_the_model(tiny_models):
    hub = ModelHub(device="cpu")
    raw = str(tiny_models["encoder"] / "_raw")
    results = by_metric(evaluator(raw, hub).evaluate_batch(samples([("", "x"), (" \n", "x")])))
    for case in results:
        assert {m: (r.status, r.score, r.success) for m, r in case.items()} == {
            m: ("scored", 0.0, False) for m in (P, R, F)
        }
        assert {r.reason for r in case.values()} == {"the answer is empty"}
    assert hub.bertscore(raw).counters.batches == 0


def test_a_missing_expected_answer_is_skipped(tiny_models):
    ev = evaluator(str(tiny_models["encoder"] / "_raw"))
    (case,) = by_metric(ev.evaluate_batch([Sample(question="q", answer="a cat")]))
    assert {r.status for r in case.values()} == {"skipped"}
    assert "no expected answer" in case[F].reason


def test_a_missing_model_skips_every_case_with_one_notice():
    ev = evaluator("FacebookAI/roberta-large")
    results = by_metric(ev.evaluate_batch(samples(PAIRS)))
    for case in results:
        assert {r.status for r in case.values()} == {"skipped"}
        assert all("'FacebookAI/roberta-large'" in r.reason for r in case.values())
    (notice,) = ev.hub.notices()
    assert notice["model"] == "FacebookAI/roberta-large"
    assert notice["evaluators"] == ["BERT Score"]
    assert "never downloads" in notice["how"]


def test_the_exact_legacy_name_and_alias_resolve():
    assert resolve("BERT Score") is BERTScore
    assert resolve("BERTScore") is BERTScore
    assert BERTScore.primary_metric().name == F
    assert [m.name for m in BERTScore.metrics] == [P, R, F]
    assert all(m.higher_is_better and m.threshold == 0.5 for m in BERTScore.metrics)
