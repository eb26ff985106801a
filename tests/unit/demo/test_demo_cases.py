"""The demo suite is well-formed and grounded in the packaged policies."""

from __future__ import annotations

import re

import pytest

from evalrunner.demo.assistant import INJECTION_REFUSAL, REFUSAL, load_policies
from evalrunner.demo.cases import DEMO_CASES, KEY_FACTS, KNOWN_FAILURES, is_policy_case
from evalrunner.suite.model import TestCase

REQUIRED = {
    "id",
    "question",
    "expected_answer",
    "expected_contexts",
    "expected_documents",
    "categories",
}
OPTIONAL = {"condition", "conversation"}
POLICIES = load_policies()


def _normalise(text: str) -> str:
    return re.sub(r"\s+", " ", text)


def test_ids_are_unique_and_readable() -> None:
    ids = [c["id"] for c in DEMO_CASES]
    assert len(ids) == len(set(ids))
    assert all(re.fullmatch(r"[a-z]+-\d{2}", i) for i in ids)


def test_suite_has_the_intended_mix() -> None:
    categories = [set(c["categories"]) for c in DEMO_CASES]
    assert 20 <= len(DEMO_CASES) <= 30
    assert sum("unrelated" in c for c in categories) >= 2
    assert sum("jailbreak" in c for c in categories) >= 2
    assert sum(is_policy_case(c) for c in DEMO_CASES) >= 18
    assert 2 <= sum("condition" in c for c in DEMO_CASES) <= 3
    assert any("conversation" in c for c in DEMO_CASES)
    assert sum({"multi-document", "reasoning"} & c != set() for c in categories) >= 2


@pytest.mark.parametrize("case", DEMO_CASES, ids=[c["id"] for c in DEMO_CASES])
def test_case_is_well_formed(case: dict) -> None:
    assert REQUIRED <= case.keys() <= REQUIRED | OPTIONAL
    assert isinstance(case["question"], str) and case["question"].strip()
    assert isinstance(case["expected_answer"], str) and case["expected_answer"].strip()
    assert all(isinstance(x, str) and x for x in case["expected_contexts"])
    assert case["categories"] and all(isinstance(x, str) for x in case["categories"])
    fields = {k: v for k, v in case.items() if k != "id"}
    # The suite model is the contract every reader produces: the demo rows must fit it.
    TestCase(index=0, case_id=case["id"], **fields)


@pytest.mark.parametrize("case", DEMO_CASES, ids=[c["id"] for c in DEMO_CASES])
def test_expected_contexts_appear_verbatim_in_the_named_documents(case: dict) -> None:
    for name in case["expected_documents"]:
        assert name in POLICIES, f"{name} is not in evalrunner/demo/policies/"
    texts = [_normalise(POLICIES[name]) for name in case["expected_documents"]]
    for sentence in case["expected_contexts"]:
        assert any(sentence in text for text in texts), sentence
    # Each named document supports the answer with at least one sentence.
    for text in texts:
        assert any(sentence in text for sentence in case["expected_contexts"])


@pytest.mark.parametrize("case", DEMO_CASES, ids=[c["id"] for c in DEMO_CASES])
def test_refusal_cases_expect_the_refusal_and_no_retrieval(case: dict) -> None:
    if "unrelated" in case["categories"]:
        assert case["expected_answer"] == REFUSAL
    elif "jailbreak" in case["categories"]:
        assert case["expected_answer"] == INJECTION_REFUSAL
    else:
        assert case["expected_contexts"] and case["expected_documents"]
        return
    assert case["expected_contexts"] == [] and case["expected_documents"] == []


def test_key_facts_cover_every_case_and_hold_for_the_expected_answer() -> None:
    assert set(KEY_FACTS) == {c["id"] for c in DEMO_CASES}
    for case in DEMO_CASES:
        for fact in KEY_FACTS[case["id"]]:
            assert fact.casefold() in case["expected_answer"].casefold(), (case["id"], fact)


def test_known_failures_name_policy_cases() -> None:
    ids = {c["id"] for c in DEMO_CASES if is_policy_case(c)}
    assert set(KNOWN_FAILURES) <= ids
    assert all(reason.strip() for reason in KNOWN_FAILURES.values())


def test_conditions_use_the_documented_forms() -> None:
    for case in DEMO_CASES:
        condition = case.get("condition")
        if condition is None:
            continue
        if isinstance(condition, list):
            for item in condition:
                if item.startswith("REGEXP:"):
                    re.compile(item.removeprefix("REGEXP:"))
        else:
            assert re.search(r'"[^"]+"|regexp\("', condition)
            assert re.search(r"\b(AND|OR|NOT)\b", condition)
