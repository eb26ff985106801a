"""Summarization completeness and faithfulness: the formula recomputed here from an NLI
scorer and an encoder of a separate hub (so the evaluator's caches cannot leak into the
expected values), the one-call batching, the source choice and the skips."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from evalrunner.evaluators.base import Sample
from evalrunner.evaluators.registry import available, resolve
from evalrunner.evaluators.sentences import split_sentences
from evalrunner.evaluators.summarization import COMPLETENESS, FAITHFULNESS, Summarization
from evalrunner.models import PACKAGED_MINILM, ModelHub, ModelRole, default_model
from tests.models import tiny

NLI_LABELS = ["contradiction", "entailment", "neutral"]
SOURCE = [
    "The cat sat on the mat. Paris is the capital of France.",
    "The sun is blue. Employees get annual leave days.",
]
SUMMARY = "The cat sat. Paris is a city in France. I hate the dog. Water is fire."


@pytest.fixture(scope="module")
def sharp_nli(tmp_path_factory) -> Path:
    """A tiny NLI cross-encoder with large random weights, so entailment − contradiction
    spreads over [−1, 1] (the shared tiny NLI gives every pair about 1/3 per label, which
    would clip every faithfulness to 0 and leave the formula untested)."""
    import torch
    from transformers import BertForSequenceClassification

    folder = tmp_path_factory.mktemp("summarization-models") / "sharp-nli"
    torch.manual_seed(5)
    config = tiny._bert_config(
        num_labels=3,
        id2label=dict(enumerate(NLI_LABELS)),
        label2id={label: i for i, label in enumerate(NLI_LABELS)},
        initializer_range=0.5,
    )
    tiny._tokenizer(folder)
    BertForSequenceClassification(config).save_pretrained(str(folder))
    return folder


def _evaluator(nli: Path, encoder: Path, hub: ModelHub | None = None, **options) -> Summarization:
    ev = Summarization(
        options={"model": str(nli), "embedding_model": str(encoder), **options},
        models=hub or ModelHub(device="cpu"),
    )
    return ev


def _expected(
    nli: Path,
    encoder: Path,
    source: list[str],
    source_text: str,
    summary: str,
    threshold: float = 0.5,
) -> tuple[float, float, np.ndarray]:
    """Faithfulness, completeness and f(s) per summary sentence, from EVALUATORS.md."""
    hub = ModelHub(device="cpu")
    scorer = hub.cross_encoder(str(nli), ModelRole.NLI)
    sentences = split_sentences(summary)
    probs = scorer.scores([(c, s) for s in sentences for c in source])
    margin = (probs[:, 1] - probs[:, 0]).reshape(len(sentences), len(source))
    f_s = margin.max(axis=1)
    faithfulness = float(np.clip(f_s.mean(), 0.0, 1.0))
    part = " ".join(s for s, f in zip(sentences, f_s, strict=True) if f >= threshold)
    if not part:
        return faithfulness, 0.0, f_s
    emb = hub.encoder(str(encoder)).embed([source_text, part])
    return faithfulness, float(np.clip(emb[0] @ emb[1], 0.0, 1.0)), f_s


def _scores(results: list) -> dict[str, float]:
    assert all(r.status == "scored" for r in results), [r.reason for r in results]
    return {r.metric: r.score for r in results}


def test_declaration() -> None:
    assert resolve("Summarization") is Summarization
    assert resolve("summarization completeness and faithfulness") is Summarization
    assert resolve("Summarization (judge)") is not Summarization
    names = [m.name for m in Summarization.metrics]
    assert names == [FAITHFULNESS, COMPLETENESS]
    assert Summarization.primary_metric().name == FAITHFULNESS
    assert all(m.threshold == 0.5 and m.higher_is_better for m in Summarization.metrics)
    others = {m.name for c in available().values() if c is not Summarization for m in c.metrics}
    assert not others & set(names)


def test_model_names_follow_the_options(tiny_models) -> None:
    ev = Summarization()
    assert ev.model_name() == default_model(ModelRole.NLI)
    assert ev.model_name(ModelRole.EMBEDDING) == default_model(ModelRole.EMBEDDING)
    ev = _evaluator(tiny_models["nli"], tiny_models["encoder"])
    assert ev.model_name() == str(tiny_models["nli"])
    assert ev.model_name(ModelRole.EMBEDDING) == str(tiny_models["encoder"])


def test_formula_with_the_retrieved_context_as_source(sharp_nli, tiny_models) -> None:
    encoder = tiny_models["encoder"]
    source = [s for chunk in SOURCE for s in split_sentences(chunk)]
    faithfulness, completeness, f_s = _expected(
        sharp_nli, encoder, source, "\n\n".join(SOURCE), SUMMARY
    )
    # The sample exercises the interesting paths: a mean inside (0, 1), a faithful part
    # that is neither empty nor the whole summary.
    assert 0.0 < float(f_s.mean()) < 1.0
    assert 0 < int((f_s >= 0.5).sum()) < len(f_s)
    ev = _evaluator(sharp_nli, encoder)
    results = ev.evaluate_batch([Sample(question="Summarise.", answer=SUMMARY, contexts=SOURCE)])
    got = _scores(results[0])
    assert got[FAITHFULNESS] == pytest.approx(faithfulness, abs=1e-6)
    assert got[COMPLETENESS] == pytest.approx(completeness, abs=1e-6)
    worst = split_sentences(SUMMARY)[int(f_s.argmin())]
    reasons = {r.metric: r.reason for r in results[0]}
    assert f"least faithful ({f_s.min():.2f}): '{worst}'" in reasons[FAITHFULNESS]
    kept = int((f_s >= 0.5).sum())
    assert f"faithful {kept} of 4 summary sentence(s)" in reasons[COMPLETENESS]


def test_faithful_threshold_option_changes_the_faithful_part(sharp_nli, tiny_models) -> None:
    encoder = tiny_models["encoder"]
    source = [s for chunk in SOURCE for s in split_sentences(chunk)]
    _, _, f_s = _expected(sharp_nli, encoder, source, "\n\n".join(SOURCE), SUMMARY)
    threshold = float(np.sort(f_s)[-1]) - 1e-4  # only the most faithful sentence
    _, completeness, _ = _expected(
        sharp_nli, encoder, source, "\n\n".join(SOURCE), SUMMARY, threshold
    )
    ev = _evaluator(sharp_nli, encoder, faithful_threshold=threshold)
    results = ev.evaluate_batch([Sample(question="Summarise.", answer=SUMMARY, contexts=SOURCE)])
    assert _scores(results[0])[COMPLETENESS] == pytest.approx(completeness, abs=1e-6)
    assert "faithful 1 of 4" in results[0][1].reason


def test_question_is_the_source_without_context(sharp_nli, tiny_models) -> None:
    encoder = tiny_models["encoder"]
    question = "Summarise this: " + " ".join(SOURCE)
    faithfulness, completeness, _ = _expected(
        sharp_nli, encoder, split_sentences(question), question, SUMMARY
    )
    ev = _evaluator(sharp_nli, encoder)
    results = ev.evaluate_batch([Sample(question=question, answer=SUMMARY, contexts=["  "])])
    got = _scores(results[0])
    assert got[FAITHFULNESS] == pytest.approx(faithfulness, abs=1e-6)
    assert got[COMPLETENESS] == pytest.approx(completeness, abs=1e-6)


def test_contradicted_summary_is_clipped_to_zero(sharp_nli, tiny_models) -> None:
    encoder = tiny_models["encoder"]
    source, summary = ["Employees get annual leave days."], "Paris is a city in France."
    _, _, f_s = _expected(sharp_nli, encoder, source, source[0], summary)
    assert f_s.mean() < 0  # the model contradicts it: the raw mean is negative
    results = _evaluator(sharp_nli, encoder).evaluate_batch(
        [Sample(question="Summarise.", answer=summary, contexts=source)]
    )
    got = _scores(results[0])
    assert got == {FAITHFULNESS: 0.0, COMPLETENESS: 0.0}
    assert f"{f_s.mean():.2f} over 1 summary sentence(s)" in results[0][0].reason
    assert "no summary sentence is faithful" in results[0][1].reason


def test_source_is_capped_and_the_reason_says_so(sharp_nli, tiny_models) -> None:
    encoder = tiny_models["encoder"]
    source = [s for chunk in SOURCE for s in split_sentences(chunk)]
    faithfulness, completeness, _ = _expected(
        sharp_nli, encoder, source[:2], "\n\n".join(SOURCE), SUMMARY
    )
    ev = _evaluator(sharp_nli, encoder, max_source_sentences=2)
    results = ev.evaluate_batch([Sample(question="Summarise.", answer=SUMMARY, contexts=SOURCE)])
    got = _scores(results[0])
    assert got[FAITHFULNESS] == pytest.approx(faithfulness, abs=1e-6)
    assert got[COMPLETENESS] == pytest.approx(completeness, abs=1e-6)
    assert "(source cut to its first 2 of 4 sentences)" in results[0][0].reason
    scorer = ev.hub.cross_encoder(str(sharp_nli), ModelRole.NLI)
    assert scorer.counters.requested == 4 * 2


def test_empty_summary_fails_and_empty_source_is_skipped(sharp_nli, tiny_models) -> None:
    ev = _evaluator(sharp_nli, tiny_models["encoder"])
    results = ev.evaluate_batch(
        [
            Sample(question="Summarise.", answer=" ... ", contexts=SOURCE),
            Sample(question="???", answer=SUMMARY),
        ]
    )
    assert _scores(results[0]) == {FAITHFULNESS: 0.0, COMPLETENESS: 0.0}
    assert all(not r.success and "the summary is empty" in r.reason for r in results[0])
    assert all(r.status == "skipped" for r in results[1])
    assert "has no sentence" in results[1][0].reason


def test_one_nli_call_per_batch_and_repeats_computed_once(
    sharp_nli, tiny_models, count_calls
) -> None:
    # Every sentence counts as faithful, so every sample also needs its embeddings.
    ev = _evaluator(sharp_nli, tiny_models["encoder"], faithful_threshold=-1.0)
    scorer = ev.hub.cross_encoder(str(sharp_nli), ModelRole.NLI)
    encoder = ev.hub.encoder(str(tiny_models["encoder"]))
    calls = count_calls(scorer, "scores")
    same = Sample(question="Summarise.", answer=SUMMARY, contexts=SOURCE)
    other = Sample(question="Summarise.", answer="The sun is hot.", contexts=SOURCE[:1])
    results = ev.evaluate_batch([same, other, same])
    assert len(calls) == 1
    assert calls[0] == 4 * 4 + 1 * 2 + 4 * 4
    assert scorer.counters.computed == 4 * 4 + 1 * 2  # the repeated sample costs nothing
    assert [r.score for r in results[0]] == [r.score for r in results[2]]
    # One source and one faithful part per distinct sample, encoded in one pass.
    assert (encoder.counters.computed, encoder.counters.batches) == (4, 1)


def test_missing_nli_model_skips_every_case_once(tiny_models) -> None:
    ev = Summarization(
        options={"embedding_model": str(tiny_models["encoder"])}, models=ModelHub(device="cpu")
    )
    samples = [Sample(question="Summarise.", answer=SUMMARY, contexts=SOURCE)] * 3
    results = ev.evaluate_batch(samples) + ev.evaluate_batch(samples)
    name = default_model(ModelRole.NLI)
    assert all(r.status == "skipped" and name in r.reason for case in results for r in case)
    notices = ev.hub.notices()
    assert [(n["model"], n["evaluators"]) for n in notices] == [(name, [Summarization.name])]


def test_missing_embedding_model_skips_the_evaluator_before_any_nli_work(
    tiny_models, tmp_path
) -> None:
    missing = str(tmp_path / "no-such-encoder")
    ev = Summarization(
        options={"model": str(tiny_models["nli"]), "embedding_model": missing},
        models=ModelHub(device="cpu"),
    )
    samples = [Sample(question="Summarise.", answer=SUMMARY, contexts=SOURCE)] * 2
    results = ev.evaluate_batch(samples)
    # Both metrics are skipped: completeness cannot be computed, and a faithfulness column
    # alone would read as the whole evaluator having run.
    assert all(r.status == "skipped" and missing in r.reason for case in results for r in case)
    assert all("embedding model" in r.reason for case in results for r in case)
    notices = ev.hub.notices()
    assert [(n["model"], n["role"]) for n in notices] == [(missing, "embedding")]
    scorer = ev.hub.cross_encoder(str(tiny_models["nli"]), ModelRole.NLI)
    assert scorer.counters.requested == 0


def test_completeness_ranks_summaries_with_minilm(sharp_nli, minilm_hub) -> None:
    """With every sentence counted faithful, completeness is the embedding similarity of
    source and summary: a summary of the main points beats one side detail, which beats an
    unrelated sentence."""
    ev = Summarization(
        options={
            "model": str(sharp_nli),
            "embedding_model": PACKAGED_MINILM,
            "faithful_threshold": -1.0,
        },
        models=minilm_hub,
    )
    source = (
        "Employees receive 25 days of annual leave per year. Leave must be requested at "
        "least two weeks in advance through the HR portal. Unused leave of up to five days "
        "can be carried over to the next year. Sick leave is separate and requires a "
        "doctor's note after three days. Managers approve leave requests within five "
        "working days."
    )
    summaries = [
        "Staff get 25 days of annual leave, booked two weeks ahead in the HR portal; up to "
        "five unused days carry over. Sick leave is separate.",
        "Managers approve requests within five working days.",
        "The cafeteria serves lunch from noon to two.",
    ]
    results = ev.evaluate_batch(
        [Sample(question="Summarise the policy.", answer=s, contexts=[source]) for s in summaries]
    )
    good, detail, unrelated = (_scores(r)[COMPLETENESS] for r in results)
    assert good > 0.75 > detail > unrelated
    assert unrelated < 0.3
    assert good >= 0.5 > detail  # the default threshold separates them
