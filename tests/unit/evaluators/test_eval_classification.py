"""Intent classification and tool choice: per-case correctness and the run's confusion matrix."""

import json
import math

import pytest

from evalrunner.evaluators import Sample, resolve
from evalrunner.evaluators.classification import (
    NO_LABEL,
    IntentClassification,
    LabelMatch,
    ToolChoice,
    confusion_summary,
)


def intent_case(expected, predicted):
    return Sample(question="q", expected_intent=expected, intent=predicted)


def evaluate(name, sample, **options):
    [result] = resolve(name)({}, options).evaluate(sample)
    return result


def test_correct_and_wrong_intent():
    r = evaluate("Intent classification", intent_case("leave", "leave"))
    assert (r.metric, r.status, r.score, r.success, r.threshold) == (
        "Intent correct",
        "scored",
        1.0,
        True,
        0.5,
    )
    r = evaluate("Intent classification", intent_case("leave", "payroll"))
    assert (r.score, r.success) == (0.0, False)
    assert "'payroll'" in r.reason and "expected 'leave'" in r.reason


def test_labels_are_trimmed_and_case_insensitive_by_default():
    assert evaluate("Intent classification", intent_case(" Leave  Request ", "leave request")).score
    r = evaluate("Intent classification", intent_case("Leave", "leave"), case_sensitive=True)
    assert r.score == 0.0
    assert evaluate("Intent classification", intent_case(" Leave", "Leave "), case_sensitive=True)


def test_missing_expected_label_skips():
    for expected in (None, "", "   "):
        r = evaluate("Intent classification", intent_case(expected, "leave"))
        assert r.status == "skipped" and r.score is None
        assert "no expected intent" in r.reason and "expected_intent" in r.reason


def test_no_reported_label_is_a_wrong_prediction():
    for predicted in (None, " "):
        r = evaluate("Intent classification", intent_case("leave", predicted))
        assert (r.status, r.score, r.success) == ("scored", 0.0, False)
        assert "reported no intent" in r.reason and NO_LABEL in r.reason


def test_tool_choice_reads_the_tool_fields():
    s = Sample(question="q", expected_tool="policy_search", tool="Policy_Search", intent="x")
    r = evaluate("Tool choice", s)
    assert (r.metric, r.score) == ("Tool correct", 1.0)
    r = evaluate("Tool choice", Sample(question="q", expected_tool="calculator", tool="search"))
    assert r.score == 0.0 and "tool 'search', expected 'calculator'" in r.reason
    r = evaluate("Tool choice", Sample(question="q", expected_intent="leave", intent="leave"))
    assert r.status == "skipped" and "no expected tool" in r.reason


def test_shared_base_and_declarations():
    assert issubclass(IntentClassification, LabelMatch) and issubclass(ToolChoice, LabelMatch)
    for cls in (IntentClassification, ToolChoice):
        spec = cls.primary_metric()
        assert (spec.kind, spec.threshold, spec.higher_is_better) == ("pass_fail", 0.5, True)
    assert resolve("tool_choice") is ToolChoice and resolve("Intent Classification")


# Hand-computed example. Cases as (expected, predicted):
#   leave→leave ×3 (one spelled " Leave "→"LEAVE"), leave→payroll, payroll→payroll,
#   payroll→it_support (predicted, never expected), payroll→leave,
#   benefits→leave, benefits→(none) (expected, never predicted); plus one case without an
#   expected intent (skipped, not counted).
# Cross-checked once against scikit-learn's precision_recall_fscore_support(labels=[the
# expected labels], average="macro", zero_division=0) and confusion_matrix.
CASES = [
    ("leave", "leave"),
    ("leave", "leave"),
    ("leave", "payroll"),
    ("payroll", "payroll"),
    ("payroll", "it_support"),
    ("benefits", "leave"),
    ("benefits", None),
    (None, "leave"),
    (" Leave ", "LEAVE"),
    ("payroll", "leave"),
]


def summary_of(cases, **options):
    evaluator = IntentClassification({}, options)
    samples = [intent_case(e, p) for e, p in cases]
    results = [evaluator.evaluate(s) for s in samples]
    return evaluator.summarize(samples, results), results


def test_summary_against_hand_computed_confusion_matrix():
    summary, results = summary_of(CASES)
    json.dumps(summary)  # serialisable as is
    assert summary["cases"] == 9
    assert summary["labels"] == ["(none)", "benefits", "it_support", "leave", "payroll"]
    assert summary["confusion_matrix"] == {
        "benefits": {"(none)": 1, "benefits": 0, "it_support": 0, "leave": 1, "payroll": 0},
        "leave": {"(none)": 0, "benefits": 0, "it_support": 0, "leave": 3, "payroll": 1},
        "payroll": {"(none)": 0, "benefits": 0, "it_support": 1, "leave": 1, "payroll": 1},
    }
    assert summary["support"] == {"benefits": 2, "leave": 4, "payroll": 3}
    # accuracy: 4 correct of 9 scored, the same as the mean of the per-case metric
    assert math.isclose(summary["accuracy"], 4 / 9)
    scored = [r.score for [r] in results if r.status == "scored"]
    assert math.isclose(sum(scored) / len(scored), summary["accuracy"])
    # leave: TP 3, predicted 5, support 4 -> P 3/5, R 3/4, F1 2/3
    # payroll: TP 1, predicted 2, support 3 -> P 1/2, R 1/3, F1 2/5
    # benefits: never predicted -> P 0 (zero division), R 0, F1 0
    per = summary["per_label"]
    assert math.isclose(per["leave"]["precision"], 3 / 5)
    assert math.isclose(per["leave"]["recall"], 3 / 4)
    assert math.isclose(per["leave"]["f1"], 2 / 3)
    assert math.isclose(per["payroll"]["f1"], 2 / 5)
    assert per["benefits"] == {"precision": 0.0, "recall": 0.0, "f1": 0.0, "support": 2}
    assert "it_support" not in per and "(none)" not in per
    assert math.isclose(summary["macro_precision"], (3 / 5 + 1 / 2 + 0) / 3)
    assert math.isclose(summary["macro_recall"], (3 / 4 + 1 / 3 + 0) / 3)
    assert math.isclose(summary["macro_f1"], (2 / 3 + 2 / 5 + 0) / 3)


def test_summary_case_sensitive_keeps_spellings_apart():
    summary, _ = summary_of([("Leave", "leave"), ("leave", "leave")], case_sensitive=True)
    assert summary["labels"] == ["Leave", "leave"]
    assert summary["accuracy"] == 0.5
    assert summary["confusion_matrix"]["Leave"] == {"Leave": 0, "leave": 1}


def test_summary_shows_first_spelling_and_skips_unscored_cases():
    summary, _ = summary_of([("Leave_Request", "leave_request "), ("x", "x")])
    assert summary["labels"] == ["Leave_Request", "x"]
    # A case whose per-case results were skipped or failed is left out.
    evaluator = IntentClassification()
    samples = [intent_case("a", "a"), intent_case("b", "c")]
    skipped = evaluator._all(status="error", reason="error: boom")
    summary = evaluator.summarize(samples, [evaluator.evaluate(samples[0]), skipped])
    assert summary["cases"] == 1 and summary["labels"] == ["a"]


def test_summary_without_scored_cases_is_none():
    assert summary_of([(None, "leave")])[0] is None
    assert IntentClassification().summarize([], []) is None
    assert confusion_summary([]) is None


@pytest.mark.parametrize("name", ["Intent classification", "Tool choice"])
def test_perfect_run(name):
    field = "intent" if name.startswith("Intent") else "tool"
    evaluator = resolve(name)()
    samples = [
        Sample(question="q", **{f"expected_{field}": label, field: label}) for label in "abca"
    ]
    summary = evaluator.summarize(samples, [evaluator.evaluate(s) for s in samples])
    assert summary["accuracy"] == summary["macro_f1"] == summary["macro_precision"] == 1.0
    assert summary["support"] == {"a": 2, "b": 1, "c": 1}


def test_applies_only_to_cases_with_an_expected_label():
    assert IntentClassification.applies_to(intent_case("leave", None))
    assert not IntentClassification.applies_to(intent_case(" ", "leave"))
    assert not ToolChoice.applies_to(intent_case("leave", "leave"))
    assert ToolChoice.applies_to(Sample(question="q", expected_tool="search"))
