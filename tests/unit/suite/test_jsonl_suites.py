"""A ``.jsonl`` suite (one row object per line, what ``evalrunner promote`` writes) reads as
the same rows a JSON list would; a line that is not a row object is refused, naming it."""

from __future__ import annotations

import pytest

from evalrunner.errors import SuiteError
from evalrunner.event_rules import SUITE_EXTENSIONS
from evalrunner.suite.readers import read_suite


def test_jsonl_rows_are_read_like_a_json_list() -> None:
    data = b'{"id": "a", "question": "Q1?", "expected_answer": "x"}\n\n{"question": "Q2?"}\n'
    suite = read_suite(data, "test-suites/promoted.jsonl")
    assert suite.name == "promoted"
    assert [(c.case_id, c.question, c.expected_answer) for c in suite.cases] == [
        ("a", "Q1?", "x"),
        ("case-0002", "Q2?", None),
    ]
    assert ".jsonl" in SUITE_EXTENSIONS  # an event may name it


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b'{"question": "Q?"}\n{oops\n', "line 2 is not valid JSON"),
        (b'{"question": "Q?"}\n["Q?"]\n', "line 2 is a list, not a row object"),
    ],
)
def test_a_bad_line_is_named(data: bytes, message: str) -> None:
    with pytest.raises(SuiteError, match=message) as caught:
        read_suite(data, "bad.jsonl")
    assert caught.value.message.startswith("bad.jsonl: ")


def test_logged_agent_steps_are_read_with_a_logged_answer() -> None:
    data = (
        b'{"question": "Q?", "actual_answer": "A.", "actual_steps": ["hr/search", '
        b'{"kind": "knowledge_base", "name": "KB1", "arguments": {"query": "Q?"}, '
        b'"output": "2 reference(s)"}]}\n'
    )
    (case,) = read_suite(data, "logged.jsonl").cases
    assert case.steps is not None
    assert [(s.kind, s.name) for s in case.steps] == [
        ("tool", "hr/search"),
        ("knowledge_base", "KB1"),
    ]
    assert case.steps[1].arguments == {"query": "Q?"} and case.steps[1].output == "2 reference(s)"


def test_a_bad_logged_step_names_its_cell() -> None:
    data = b'{"question": "Q?", "actual_answer": "A.", '
    data += b'"actual_steps": [{"kind": "robot", "name": "x"}]}\n'
    with pytest.raises(SuiteError, match=r"actual_steps.*kind must be tool") as caught:
        read_suite(data, "logged.jsonl")
    assert "row 1" in caught.value.message
