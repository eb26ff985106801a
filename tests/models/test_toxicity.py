"""Toxicity (detoxify): the six probabilities detoxify itself gives, lower is better with the
flag above the threshold, each distinct answer classified once, empty answers, a missing
model, and the judge variant's new name."""

from __future__ import annotations

import pytest
import torch
from detoxify import Detoxify

from evalrunner.evaluators.base import Sample
from evalrunner.evaluators.judge_safety import ToxicityJudge
from evalrunner.evaluators.registry import resolve
from evalrunner.evaluators.toxicity import Toxicity
from evalrunner.models import ModelHub

METRICS = {
    "Toxicity": "toxicity",
    "Severe toxicity": "severe_toxicity",
    "Obscene": "obscene",
    "Threat": "threat",
    "Insult": "insult",
    "Identity attack": "identity_attack",
}
TEXTS = ["you are a stupid idiot", "the cat sat on the mat .", "i love the sun"]


def by_metric(results):
    return [{r.metric: r for r in case} for case in results]


def evaluator(model: str, hub: ModelHub | None = None, **kwargs) -> Toxicity:
    ev = Toxicity(options={"model": model}, **kwargs, models=hub or ModelHub(device="cpu"))
    return ev


def answers(*texts: str) -> list[Sample]:
    return [Sample(question="q", answer=t) for t in texts]


@pytest.fixture(scope="module")
def detoxify_direct(tiny_models) -> dict[str, dict[str, float]]:
    """What detoxify's own loader and predict give for each text, one text at a time."""
    folder = tiny_models["detoxify"]
    (checkpoint,) = folder.glob("*.ckpt")
    model = Detoxify(checkpoint=str(checkpoint), huggingface_config_path=str(folder))
    return {t: model.predict(t) for t in TEXTS}


def test_scores_are_detoxify_probabilities(tiny_models, detoxify_direct):
    got = by_metric(evaluator(str(tiny_models["detoxify"])).evaluate_batch(answers(*TEXTS)))
    for text, case in zip(TEXTS, got, strict=True):
        expected = detoxify_direct[text]
        assert set(case) == set(METRICS)
        for metric, cls in METRICS.items():
            assert case[metric].status == "scored"
            assert case[metric].score == pytest.approx(expected[cls], abs=1e-6)
        top = max(METRICS, key=lambda m: expected[METRICS[m]])
        assert (
            f"highest class: {top.lower()} {expected[METRICS[top]]:.2f}" in case["Toxicity"].reason
        )
        assert case["Insult"].reason.startswith(f"insult probability {expected['insult']:.2f}")
    # the texts get different scores, so a mix-up of their order would show
    assert len({round(c["Toxicity"].score, 7) for c in got}) == 3


def test_a_score_above_the_threshold_fails(tiny_models):
    # The tiny model says about 0.5 for every class: under the default 0.75, over 0.1.
    (default,) = by_metric(evaluator(str(tiny_models["detoxify"])).evaluate_batch(answers("hi")))
    assert all(r.success is True and r.threshold == 0.75 for r in default.values())
    strict = evaluator(str(tiny_models["detoxify"]), thresholds={"Toxicity": 0.1})
    (case,) = by_metric(strict.evaluate_batch(answers("hi")))
    assert case["Toxicity"].score > 0.1
    assert case["Toxicity"].success is False and case["Toxicity"].threshold == 0.1
    assert all(case[m].success is True for m in METRICS if m != "Toxicity")
    assert all(not m.higher_is_better and m.threshold == 0.75 for m in Toxicity.metrics)


def test_each_distinct_answer_is_classified_once_in_one_call(tiny_models):
    hub = ModelHub(device="cpu")
    ev = evaluator(str(tiny_models["detoxify"]), hub)
    results = by_metric(ev.evaluate_batch(answers(*(["you idiot"] * 5), "hello", "  you idiot ")))
    counters = hub.classifier(str(tiny_models["detoxify"])).counters
    assert (counters.computed, counters.batches) == (2, 1)
    assert counters.requested == 2  # the evaluator sends each distinct answer once
    assert len({c["Toxicity"].score for c in results[:5] + results[6:]}) == 1


def test_an_empty_answer_scores_zero_without_the_model(tiny_models):
    hub = ModelHub(device="cpu")
    results = by_metric(
        evaluator(str(tiny_models["detoxify"]), hub).evaluate_batch(answers("", " "))
    )
    for case in results:
        assert {(r.status, r.score, r.success, r.reason) for r in case.values()} == {
            ("scored", 0.0, True, "the answer is empty")
        }
    assert hub.classifier(str(tiny_models["detoxify"])).counters.requested == 0


def test_a_missing_answer_is_skipped(tiny_models):
    (case,) = by_metric(
        evaluator(str(tiny_models["detoxify"])).evaluate_batch([Sample(question="q")])
    )
    assert {r.status for r in case.values()} == {"skipped"}


def test_a_missing_model_skips_every_case_with_one_notice(monkeypatch, tmp_path):
    monkeypatch.setenv("TORCH_HOME", str(tmp_path / "torch"))  # no cached detoxify checkpoint
    ev = Toxicity(models=ModelHub(device="cpu"))  # the default model: detoxify/original
    results = by_metric(ev.evaluate_batch(answers("you idiot", "hello")))
    for case in results:
        assert {r.status for r in case.values()} == {"skipped"}
        assert all("'detoxify/original'" in r.reason for r in case.values())
    (notice,) = ev.hub.notices()
    assert notice["model"] == "detoxify/original" and notice["evaluators"] == ["Toxicity"]


def test_a_checkpoint_with_other_classes_is_an_error_naming_them(tiny_models, tmp_path):
    folder = tmp_path / "other-labels"
    folder.mkdir()
    for file in tiny_models["detoxify"].iterdir():
        if file.suffix != ".ckpt":
            (folder / file.name).write_bytes(file.read_bytes())
    (checkpoint,) = tiny_models["detoxify"].glob("*.ckpt")
    loaded = torch.load(checkpoint, weights_only=False)
    loaded["config"]["dataset"]["args"]["classes"] = ["spam", "ham", "a", "b", "c", "d"]
    torch.save(loaded, folder / "other.ckpt")
    (case,) = by_metric(evaluator(str(folder)).evaluate_batch(answers("hello")))
    assert {r.status for r in case.values()} == {"error"}
    assert "has no class toxicity, severe_toxicity" in case["Toxicity"].reason
    assert "its classes: spam, ham" in case["Toxicity"].reason


def test_the_exact_name_is_the_model_evaluator_and_the_judge_keeps_its_metrics():
    assert resolve("Toxicity") is Toxicity
    assert resolve("Toxicity (judge)") is ToxicityJudge
    assert ToxicityJudge.aliases == ()
    assert [m.name for m in ToxicityJudge.metrics] == [
        "Toxicity failure",
        "Toxicity in retrieved context",
        "Toxicity added by generation",
    ]
    assert Toxicity.primary_metric().name == "Toxicity"
    assert [m.name for m in Toxicity.metrics] == list(METRICS)


def test_the_default_model_is_found_where_the_image_bakes_it(
    tiny_models, detoxify_direct, tmp_path, monkeypatch
):
    """`detoxify/original` (the default) is read from the torch hub cache, where detoxify
    itself downloads it while the GPU image is built."""
    import shutil

    from detoxify.detoxify import MODEL_URLS

    monkeypatch.setenv("TORCH_HOME", str(tmp_path / "torch"))
    cache = tmp_path / "torch" / "hub" / "checkpoints"
    cache.mkdir(parents=True)
    (checkpoint,) = tiny_models["detoxify"].glob("*.ckpt")
    shutil.copy(checkpoint, cache / MODEL_URLS["original"].rsplit("/", 1)[-1])

    ev = Toxicity(models=ModelHub(device="cpu"))
    (case,) = by_metric(ev.evaluate_batch(answers(TEXTS[0])))
    assert case["Toxicity"].status == "scored"
    assert case["Toxicity"].score == pytest.approx(detoxify_direct[TEXTS[0]]["toxicity"], abs=1e-6)
    assert ev.hub.stats()["models"]["detoxify/original"]["path"].startswith(str(cache))


class _NoJudgeWanted:
    """Run services whose judge must not be built: the model is there."""

    def __init__(self) -> None:
        self.models = ModelHub(device="cpu")

    @property
    def judge(self):
        raise AssertionError("the judge was built although the toxicity model loaded")


def test_with_its_model_toxicity_never_builds_the_judge(tiny_models) -> None:
    """Issue 32 item 6 (b): the judge stands in only when the model is missing."""
    options = {"model": str(tiny_models["detoxify"])}
    ev = Toxicity.for_run(None, options, _NoJudgeWanted())
    (results,) = ev.evaluate_batch(answers("hello there"))
    assert {r.status for r in results} == {"scored"}
    assert "judged" not in results[0].reason
