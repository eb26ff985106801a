"""Retrieval rank (RR, hit@k, recall@k over document ids) and chunk match."""

import json
import math

import pytest
from pydantic import ValidationError

from evalrunner.evaluators import Sample, resolve
from evalrunner.evaluators.retrieval import (
    NO_DOCUMENTS,
    ChunkMatch,
    RetrievalOptions,
    RetrievalRank,
    chunk_found,
    document_key,
)


def ranks(expected, retrieved, **options):
    sample = Sample(question="q", expected_documents=expected, documents=retrieved)
    return {r.metric: r for r in resolve("Retrieval rank")({}, options).evaluate(sample)}


@pytest.mark.parametrize(
    "uri",
    [
        "s3://bucket/docs/leave.md",
        "https://intranet.example.com/docs/Leave.md?version=3#carry-over",
        "C:\\policies\\leave.md",
        "/srv/kb/leave.md/",
        "  LEAVE.MD ",
        "docs/leave%2Emd",
    ],
)
def test_basename_matching(uri):
    assert document_key(uri) == "leave.md"
    assert ranks(["leave.md"], [uri])["Reciprocal rank"].score == 1.0


def test_exact_matching_compares_whole_ids():
    assert document_key(" S3://Bucket/Leave.md ", "exact") == "s3://bucket/leave.md"
    r = ranks(["leave.md"], ["s3://bucket/docs/leave.md"], match="exact")
    assert r["Reciprocal rank"].score == 0.0
    r = ranks(["s3://bucket/docs/leave.md"], ["S3://BUCKET/docs/leave.md"], match="exact")
    assert r["Reciprocal rank"].score == 1.0
    # A bare host URL keeps its host as basename.
    assert document_key("https://example.com/") == "example.com"


def test_reciprocal_rank_hit_and_recall():
    retrieved = ["s3://kb/expenses.md", "s3://kb/remote.md", "s3://kb/leave.md", "s3://kb/a.md"]
    r = ranks(["leave.md", "a.md", "travel.md"], retrieved)
    assert math.isclose(r["Reciprocal rank"].score, 1 / 3)
    assert r["Reciprocal rank"].success is False  # threshold 0.5
    assert "'leave.md' at rank 3" in r["Reciprocal rank"].reason
    assert (r["Hit@k"].score, r["Hit@k"].success) == (1.0, True)  # k = 3
    assert math.isclose(r["Document recall@k"].score, 1 / 3)  # a.md is 4th, travel.md absent
    assert r["Document recall@k"].reason.endswith("'a.md' (rank 4), 'travel.md' (not retrieved)")
    # k is an option
    r = ranks(["leave.md", "a.md", "travel.md"], retrieved, k=2)
    assert (r["Hit@k"].score, r["Document recall@k"].score) == (0.0, 0.0)
    assert "within the first 2" in r["Hit@k"].reason
    r = ranks(["leave.md", "a.md", "travel.md"], retrieved, k=4)
    assert math.isclose(r["Document recall@k"].score, 2 / 3)


def test_first_rank_and_all_found():
    r = ranks(["leave.md"], ["leave.md", "other.md"])
    assert r["Reciprocal rank"].score == 1.0 and r["Reciprocal rank"].success
    assert r["Document recall@k"].score == 1.0


def test_beyond_k_max_is_zero():
    retrieved = [f"doc{i}.md" for i in range(1, 12)] + ["leave.md"]
    r = ranks(["leave.md"], retrieved)
    assert r["Reciprocal rank"].score == 0.0
    assert "rank 12, beyond k_max 10" in r["Reciprocal rank"].reason
    assert math.isclose(ranks(["leave.md"], retrieved, k_max=20)["Reciprocal rank"].score, 1 / 12)
    assert ranks(["leave.md"], retrieved[2:])["Reciprocal rank"].score == 1 / 10


def test_not_found():
    r = ranks(["leave.md"], ["a.md", "b.md"])
    assert [r[m].score for m in ("Reciprocal rank", "Hit@k", "Document recall@k")] == [0, 0, 0]
    assert "none of the 1 expected documents among the 2 retrieved" in r["Reciprocal rank"].reason


def test_duplicates_in_retrieved_are_ranked_once():
    # Three chunks of expenses.md, then leave.md: leave.md is the 2nd distinct document.
    retrieved = ["s3://kb/expenses.md", "s3://kb/expenses.md", "expenses.md", "s3://kb/leave.md"]
    r = ranks(["leave.md"], retrieved)
    assert r["Reciprocal rank"].score == 0.5
    assert "2 repeated documents dropped" in r["Reciprocal rank"].reason
    assert r["Hit@k"].score == 1.0
    # Repeats of an expected document count once towards recall.
    r = ranks(["leave.md", "remote.md"], ["leave.md", "leave.md", "leave.md"])
    assert r["Document recall@k"].score == 0.5
    # Duplicates among the expected documents count once too.
    r = ranks(["leave.md", "s3://x/leave.md"], ["leave.md"])
    assert r["Document recall@k"].score == 1.0


def test_no_documents_and_no_expected_documents():
    r = ranks(["leave.md"], [])
    for metric in ("Reciprocal rank", "Hit@k", "Document recall@k"):
        assert (r[metric].status, r[metric].score, r[metric].reason) == (
            "scored",
            0.0,
            NO_DOCUMENTS,
        )
    assert r["Reciprocal rank"].reason == "the target reported no retrieved documents"
    for expected in ([], ["  "]):
        r = ranks(expected, ["leave.md"])
        assert all(x.status == "skipped" for x in r.values())
        assert "no expected documents" in r["Reciprocal rank"].reason


def test_summary_mrr_and_hit_rate():
    evaluator = RetrievalRank({}, {"k": 1})
    samples = [
        Sample(question="q", expected_documents=["a.md"], documents=["a.md"]),  # RR 1, hit
        Sample(question="q", expected_documents=["a.md"], documents=["b.md", "a.md"]),  # 1/2
        Sample(question="q", expected_documents=["a.md"], documents=[]),  # 0
        Sample(question="q", documents=["a.md"]),  # skipped: not counted
    ]
    summary = evaluator.summarize(samples, [evaluator.evaluate(s) for s in samples])
    json.dumps(summary)
    assert summary["cases"] == 3 and summary["k"] == 1 and summary["k_max"] == 10
    assert math.isclose(summary["mrr"], (1 + 0.5 + 0) / 3)
    assert math.isclose(summary["hit_rate@k"], 1 / 3)
    assert evaluator.summarize(samples[3:], [evaluator.evaluate(samples[3])]) is None


def test_options_are_validated():
    with pytest.raises(ValidationError):
        RetrievalOptions.model_validate({"match": "fuzzy"})
    with pytest.raises(ValidationError):
        RetrievalOptions.model_validate({"k": 0})
    spec = RetrievalRank.primary_metric()
    assert (spec.name, spec.threshold) == ("Reciprocal rank", 0.5)


def chunk(expected, contexts):
    [r] = resolve("Chunk match")().evaluate(
        Sample(question="q", expected_contexts=expected, contexts=contexts)
    )
    return r


POLICY = (
    "Full-time employees are entitled to 25 days of paid annual leave per calendar year. "
    "Up to five unused days may be carried over until 31 March of the following year."
)


def test_expected_chunk_inside_a_retrieved_chunk():
    r = chunk(["25 days of PAID annual\n leave"], ["Intro.", POLICY])
    assert (r.score, r.success) == (1.0, True)
    assert "contained in chunk 2" in r.reason


def test_retrieved_chunk_inside_the_expected_passage():
    first_sentence = POLICY.split(". ")[0] + "."
    assert chunk([POLICY], [first_sentence]).score == 1.0  # more than half of it
    # A short piece (a heading) inside the expected passage does not count.
    assert chunk([POLICY], ["annual leave"]).score == 0.0


def test_token_overlap_of_the_expected_chunk():
    reformatted = POLICY.replace(".", ";").replace("25", "twenty-five")
    # Not contained either way, but 30 of 31 tokens of the expected passage are there.
    r = chunk([POLICY], ["Leave policy — " + reformatted])
    assert r.score == 1.0 and "tokens with chunk 1" in r.reason
    # Below 80 % of the expected tokens: not found.
    half = " ".join(POLICY.split()[:15])
    assert not chunk_found(POLICY, half + " something else entirely unrelated here")


def test_share_of_expected_contexts_and_reason():
    r = chunk([POLICY, "Remote work is allowed two days a week.", POLICY.upper()], [POLICY])
    assert math.isclose(r.score, 1 / 2)  # the upper-case copy is the same passage
    assert r.success is False  # threshold 0.75
    assert "1 of 2 expected contexts found" in r.reason
    assert "not found: 'remote work is allowed two days a week.'" in r.reason


def test_chunk_match_skips():
    r = chunk(["a"], [])
    assert r.status == "skipped" and "no retrieved context" in r.reason
    r = chunk([], ["a"])
    assert r.status == "skipped" and "no expected contexts" in r.reason
    r = chunk(["   "], ["a"])
    assert r.status == "skipped" and "blank" in r.reason
    assert ChunkMatch.primary_metric().threshold == 0.75


def test_applies_to():
    assert RetrievalRank.applies_to(Sample(question="q", expected_documents=["a.md"]))
    assert not RetrievalRank.applies_to(Sample(question="q", expected_documents=[" "]))
    assert not RetrievalRank.applies_to(Sample(question="q", documents=["a.md"]))
    assert ChunkMatch.applies_to(Sample(question="q", expected_contexts=["x"]))
    assert not ChunkMatch.applies_to(Sample(question="q", contexts=["x"]))
