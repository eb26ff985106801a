"""Names users bring from H2O Eval Studio and the seed's HR sheet resolve to our evaluators,
and the evaluators added for them score as documented."""

from __future__ import annotations

import pytest

from evalrunner.evaluators import Sample, resolve, resolve_all
from evalrunner.evaluators.registry import default_names

#: H2O Eval Studio's catalog names (as its evaluator overview writes them) and the seed
#: sheet's calculated-metric names, with the evaluator each must select.
NAMES = {
    "Ragas": "Ragas composite",
    "RAGAS": "Ragas composite",
    "BYOP: Bring your own prompt": "BYOP",
    "Parameterizable BYOP": "BYOP",
    "Sexism (Judge)": "Sexism",
    "Stereotypes (Judge)": "Stereotypes",
    "Answer relevancy (sentence s.)": "Answer relevancy (sentence similarity)",
    "Answer s. sentence similarity": "Answer semantic sentence similarity",
    "Summarization (c. and f.)": "Summarization completeness and faithfulness",
    "Context relevancy (s.r. & p.)": "Context relevancy (soft recall and precision)",
    "Fact-check (Agent-based)": "Fact-check",
    "Encoding Guardrail Evaluator": "Encoding guardrail",
    "Language mismatch (Judge)": "Language mismatch (judge)",
    "Summarization (Judge)": "Summarization (judge)",
    "Fairness bias": "Bias",
    "Classification": "Classification",
    "Answer relevancy": "Answer Relevancy",
    "Context precision": "Contextual Precision",
    "Groundedness": "Groundedness",
    "ada_similarity": "Answer semantic similarity",
    "gpt_similarity": "Similarity (1-5)",
    "gpt_groundedness": "Groundedness (1-5)",
    "gpt_groundness": "Groundedness (1-5)",  # the HR plan's own spelling
    "gpt_relevance": "Relevance (1-5)",
    "gpt_retrieval_score": "Retrieval score (1-5)",
    "gpt_coherence": "Coherence (1-5)",
    "gpt_fluency": "Fluency (1-5)",
    "F1 score": "Token F1",
    "ROUGE": "Rouge Metric",
    "classified_intent_score": "Intent classification",
    "selected_tool_score": "Tool choice",
    "reciprocal rank": "Retrieval rank",
    "retrieved_data_score": "Retrieved data match",
}


@pytest.mark.parametrize(("written", "evaluator"), NAMES.items())
def test_name_resolves(written: str, evaluator: str) -> None:
    assert resolve(written).name == evaluator


@pytest.mark.parametrize("written", ["ROUGE/BLUE", "rouge/bleu"])
def test_the_plan_s_rouge_bleu_column_selects_both(written: str) -> None:
    assert [c.name for c in resolve_all([written, "BLEU"])] == ["Rouge Metric", "BLEU"]


def sample(**fields: object) -> Sample:
    return Sample.model_validate({"question": "q", **fields})


def score(name: str, **fields: object) -> tuple[str, float | None, str]:
    [result] = resolve(name)().evaluate(sample(**fields))
    return result.status, result.score, result.reason


def test_retrieved_data_match_compares_json_as_json_and_text_loosely() -> None:
    exact = score(
        "Retrieved data match", expected_data='{"a": 1, "b": [2]}', data='{"b":[2],"a":1.0}'
    )
    assert exact[:2] == ("scored", 1.0)
    assert score("Retrieved data match", expected_data="12 days", data=" 12  Days ")[:2] == (
        "scored",
        1.0,
    )
    wrong = score("Retrieved data match", expected_data='{"a": 1}', data='{"a": 2}')
    assert wrong[:2] == ("scored", 0.0) and "expected" in wrong[2]
    assert score("Retrieved data match", expected_data="12", data=None)[:2] == ("scored", 0.0)
    skipped = score("Retrieved data match", data="12")
    assert skipped[0] == "skipped" and "expected_data" in skipped[2]


def test_classification_takes_the_answer_as_a_label_and_runs_only_when_named() -> None:
    assert score("Classification", expected_answer="Positive", answer=" positive ")[1] == 1.0
    assert score("Classification", expected_answer="Positive", answer="Negative")[1] == 0.0
    assert "Classification" not in default_names(with_judge=True)
    assert "Retrieved data match" in default_names()
