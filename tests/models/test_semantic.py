"""The embedding evaluators: formulas on a tiny encoder, quality on the packaged MiniLM,
one shared encoder pass per run, and a missing model skipped with one notice."""

from __future__ import annotations

import numpy as np
import pytest
from sentence_transformers import CrossEncoder, SentenceTransformer

from evalrunner.evaluators.base import Sample
from evalrunner.evaluators.registry import resolve
from evalrunner.evaluators.semantic import (
    AnswerRelevancySentence,
    AnswerSemanticSentenceSimilarity,
    AnswerSemanticSimilarity,
    ContextMeanReciprocalRank,
    ContextRelevancy,
    Groundedness,
)
from evalrunner.evaluators.sentences import split_sentences
from evalrunner.models import PACKAGED_MINILM, ModelHub

PARIS = "Paris is the capital of France."


def scores(evaluator, samples):
    """metric -> list of (status, score, reason) per sample."""
    out: dict[str, list] = {}
    for results in evaluator.evaluate_batch(samples):
        for r in results:
            out.setdefault(r.metric, []).append((r.status, r.score, r.reason))
    return out


def unit(model, texts):
    vectors = model.encode(texts, convert_to_numpy=True)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


# ----------------------------------------------------------------------------- quality (MiniLM)


def test_a_paraphrase_outscores_an_unrelated_answer(minilm_hub):
    ev = AnswerSemanticSimilarity(models=minilm_hub)
    expected = "Employees get 25 days of paid annual leave per year."
    got = scores(
        ev,
        [
            Sample(
                question="q",
                expected_answer=expected,
                answer="You are entitled to 25 paid vacation days every year.",
            ),
            Sample(question="q", expected_answer=expected, answer="The cafeteria opens at 8 am."),
        ],
    )["Answer semantic similarity"]
    (_, para, reason), (_, unrelated, _) = got
    assert para > 0.6 > 0.2 > unrelated  # MiniLM: 0.69 against 0.06
    assert para - unrelated > 0.4
    assert "cosine similarity" in reason and PACKAGED_MINILM in reason


def test_a_grounded_answer_outscores_an_invented_one(minilm_hub):
    ev = Groundedness(models=minilm_hub)
    contexts = [
        "Full-time employees receive 25 days of annual leave. Leave must be approved by a manager.",
        "Unused leave of up to 5 days can be carried over to the next year.",
    ]
    grounded = "You get 25 days of annual leave. Up to 5 unused days carry over."
    invented = "You get 25 days of annual leave. You also get a free company car every year."
    got = scores(
        ev,
        [
            Sample(question="q", contexts=contexts, answer=grounded),
            Sample(question="q", contexts=contexts, answer=invented),
        ],
    )["Groundedness"]
    (s1, good, _), (s2, bad, reason) = got
    assert s1 == s2 == "scored"
    assert good > 0.65 > bad
    assert "free company car" in reason  # the least grounded sentence is named


def test_relevancy_prefers_an_on_topic_answer(minilm_hub):
    ev = AnswerRelevancySentence(models=minilm_hub)
    q = "How many days of annual leave do I get?"
    got = scores(
        ev,
        [
            Sample(question=q, answer="Thanks for asking. You get 25 days of annual leave."),
            Sample(question=q, answer="Our office is located downtown near the station."),
        ],
    )["Answer relevancy (sentence similarity)"]
    (_, on, reason), (_, off, _) = got
    assert on > 0.4 > off
    assert "25 days of annual leave" in reason  # the best sentence, not the greeting


def test_context_relevancy_and_rank_follow_the_relevant_chunk(minilm_hub):
    q = "What is the capital of France?"
    relevant = "Paris is the capital and largest city of France."
    noise = ["Bananas are rich in potassium.", "The stock market closed higher on Friday."]
    first = Sample(question=q, contexts=[relevant, *noise])
    third = Sample(question=q, contexts=[*noise, relevant])
    none = Sample(question=q, contexts=noise)

    rel = scores(ContextRelevancy(models=minilm_hub), [first, third, none])
    recall = [s for _, s, _ in rel["Context recall relevancy"]]
    precision = [s for _, s, _ in rel["Context precision relevancy"]]
    assert recall[0] == pytest.approx(recall[1]) and recall[0] > 0.7 > recall[2]
    assert precision[0] == pytest.approx(precision[1]) and precision[0] < recall[0]
    assert "chunk 3 is the most relevant" in rel["Context recall relevancy"][1][2]

    mrr = scores(ContextMeanReciprocalRank(models=minilm_hub), [first, third, none])
    values = [s for _, s, _ in mrr["Context mean reciprocal rank"]]
    assert values == pytest.approx([1.0, 1 / 3, 0.0])
    assert "rank 3" in mrr["Context mean reciprocal rank"][1][2]


# ----------------------------------------------------------------------------- formulas (tiny)


@pytest.fixture
def tiny(tiny_models):
    return str(tiny_models["encoder"])


def test_sentence_similarity_is_the_mean_and_min_of_best_matches(tiny, tiny_models):
    answer = "The cat sat on the mat. Paris is a city. I love the sun."
    expected = "A cat sat. The capital of France is Paris."
    ev = AnswerSemanticSentenceSimilarity(options={"model": tiny}, models=ModelHub(device="cpu"))
    got = scores(ev, [Sample(question="q", answer=answer, expected_answer=expected)])

    model = SentenceTransformer(tiny, device="cpu")
    a, e = split_sentences(answer), split_sentences(expected)
    assert len(a) == 3 and len(e) == 2
    best = (unit(model, a) @ unit(model, e).T).max(axis=1)
    assert got["Sentence similarity mean"][0][1] == pytest.approx(float(best.mean()), abs=1e-5)
    assert got["Sentence similarity min"][0][1] == pytest.approx(float(best.min()), abs=1e-5)
    assert a[int(best.argmin())][:20] in got["Sentence similarity min"][0][2]


def test_groundedness_is_the_min_over_sentences_of_the_best_context_sentence(tiny):
    answer = "The cat sat on the mat. The dog hates water."
    contexts = ["The cat sat. It was blue.", "A dog loves water!"]
    ev = Groundedness(options={"model": tiny}, models=ModelHub(device="cpu"))
    got = scores(ev, [Sample(question="q", answer=answer, contexts=contexts)])["Groundedness"]

    model = SentenceTransformer(tiny, device="cpu")
    context_sentences = ["The cat sat.", "It was blue.", "A dog loves water!"]
    best = (unit(model, split_sentences(answer)) @ unit(model, context_sentences).T).max(axis=1)
    assert got[0][1] == pytest.approx(float(np.clip(best.min(), 0, 1)), abs=1e-5)


def test_the_cross_encoder_option_scores_pairs_with_the_cross_encoder(tiny_models):
    path = str(tiny_models["cross_encoder"])
    ev = AnswerSemanticSimilarity(options={"cross_encoder": path}, models=ModelHub(device="cpu"))
    samples = [
        Sample(question="q", answer="the cat sat", expected_answer="a cat sat on the mat"),
        Sample(question="q", answer="", expected_answer="a cat sat on the mat"),
        Sample(question="q", answer="paris", expected_answer="the capital of france"),
    ]
    got = scores(ev, samples)["Answer semantic similarity"]
    expected = CrossEncoder(path, device="cpu").predict(
        [("the cat sat", "a cat sat on the mat"), ("paris", "the capital of france")]
    )
    assert [g[1] for g in got] == pytest.approx([expected[0], 0.0, expected[1]], abs=1e-5)
    assert got[1][2] == "the answer is empty"
    assert "cross-encoder score" in got[0][2]


def test_empty_answers_score_zero_and_groundedness_reports_them(tiny):
    hub = ModelHub(device="cpu")
    sample = Sample(question="q", answer="", expected_answer="x y", contexts=["the cat sat."])
    sim = scores(AnswerSemanticSimilarity(options={"model": tiny}, models=hub), [sample])
    assert sim["Answer semantic similarity"][0] == ("scored", 0.0, "the answer is empty")
    grounded = scores(Groundedness(options={"model": tiny}, models=hub), [sample])["Groundedness"]
    assert grounded[0][0] == "error" and "no sentence" in grounded[0][2]


# ----------------------------------------------------------------------------- shared work


ALL = (
    AnswerSemanticSimilarity,
    AnswerSemanticSentenceSimilarity,
    AnswerRelevancySentence,
    Groundedness,
    ContextRelevancy,
    ContextMeanReciprocalRank,
)


def test_six_evaluators_share_one_encoder_and_encode_each_text_once(tiny):
    hub = ModelHub(device="cpu", batch_size=8)
    contexts = ["The cat sat on the mat. It was blue.", "Paris is the capital of France."]
    samples = [
        Sample(
            question=f"where did the cat sit {i % 3}?",
            expected_answer="The cat sat on the mat.",
            answer="The cat sat on the mat. Paris is a city." if i % 2 else "It was blue.",
            contexts=contexts,
        )
        for i in range(40)
    ]
    for cls in ALL:
        results = cls(options={"model": tiny}, models=hub).evaluate_batch(samples)
        assert all(r.status == "scored" for rs in results for r in rs), cls.name
    counters = hub.encoder(tiny).counters
    unique = {
        *(s.question for s in samples),
        *(t for s in samples for t in (s.answer, s.expected_answer)),
        *(t for s in samples for a in (s.answer, s.expected_answer) for t in split_sentences(a)),
        *(t for c in contexts for t in split_sentences(c)),
    }
    assert counters.computed == len(unique)  # every distinct text encoded exactly once
    assert counters.requested > 10 * counters.computed
    assert hub.stats()["models"][tiny]["device"] == "cpu"


def test_a_missing_model_skips_every_case_and_is_reported_once():
    hub = ModelHub(device="cpu")
    samples = [
        Sample(question="q", answer="a b.", expected_answer="a b.", contexts=["a b."])
        for _ in range(3)
    ]
    for cls in (AnswerSemanticSimilarity, Groundedness):
        results = cls(options={"model": "BAAI/bge-small-en-v1.5"}, models=hub).evaluate_batch(
            samples
        )
        for rs in results:
            assert [r.status for r in rs] == ["skipped"]
            assert "'BAAI/bge-small-en-v1.5' is not available" in rs[0].reason
            assert rs[0].score is None
    (notice,) = hub.notices()
    assert notice["model"] == "BAAI/bge-small-en-v1.5"
    assert notice["evaluators"] == ["Answer semantic similarity", "Groundedness"]
    assert "hf download BAAI/bge-small-en-v1.5" in notice["how"]


def test_names_users_type_resolve():
    assert resolve("Context relevancy") is ContextRelevancy
    assert resolve("context-mrr") is ContextMeanReciprocalRank
    assert resolve("answer semantic similarity") is AnswerSemanticSimilarity
    assert resolve("Groundedness") is Groundedness


def test_half_precision_is_the_cuda_default_and_gives_the_same_embeddings(tiny):
    assert ModelHub(device="cuda").fp16 and not ModelHub(device="cpu").fp16
    assert not ModelHub(device="cuda", precision="fp32").fp16
    texts = ["the cat sat on the mat", "paris is the capital of france"]
    full = ModelHub(device="cpu").encoder(tiny).embed(texts)
    hub = ModelHub(device="cpu", precision="fp16")  # the CUDA path, run on the CPU here
    half = hub.encoder(tiny)
    assert str(next(half.model.parameters()).dtype) == "torch.float16"
    assert np.abs(half.embed(texts) - full).max() < 5e-3
    assert hub.stats()["models"][tiny]["precision"] == "fp16"
