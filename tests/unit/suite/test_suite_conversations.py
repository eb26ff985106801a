"""Scripted conversations in a suite: one row per turn grouped by conversation_id (xlsx, csv,
JSON rows) or a turns cell, read into one case per conversation; every mistake names the row
and the column."""

from __future__ import annotations

import json

import pytest
from openpyxl import load_workbook

from evalrunner.errors import SuiteError
from evalrunner.suite import read_suite, read_suite_file, write_suite_xlsx, write_template
from evalrunner.suite.conversations import MAX_TURNS


def _csv(text: str) -> bytes:
    return text.encode("utf-8")


def test_rows_of_a_conversation_become_one_case_with_its_turns_in_order(tmp_path) -> None:
    path = write_suite_xlsx(
        tmp_path / "conv.xlsx",
        [
            {"question": "How long is notice?", "expected_answer": "One month"},
            {
                "conversation_id": "memory",
                "turn": 2,
                "question": "What is my name?",
                "expected_answer": "Ana",
                "categories": ["memory"],
            },
            {
                "conversation_id": "memory",
                "turn": 1,
                "question": "Hi, my name is Ana.",
                "role": "a polite HR assistant",
                "conversation": [{"role": "system", "content": "Be brief."}],
            },
        ],
    )
    suite = read_suite_file(path)
    single, conversation = suite.cases
    assert not single.is_conversation and single.index == 0
    assert conversation.case_id == conversation.conversation_id == "memory"
    assert conversation.index == 1 and conversation.row == 3
    assert [(t.case_id, t.turn, t.question, t.expected_answer) for t in conversation.turns] == [
        ("memory#1", 1, "Hi, my name is Ana.", None),
        ("memory#2", 2, "What is my name?", "Ana"),
    ]
    assert [t.row for t in conversation.turns] == [4, 3]  # each turn keeps its own row
    assert conversation.metadata["role"] == "a polite HR assistant"
    assert conversation.categories == ["memory"]
    # the fixed earlier turns stay on the conversation, not on a turn
    assert [t.content for t in conversation.conversation] == ["Be brief."]
    assert all(not t.conversation for t in conversation.turns)


def test_without_a_turn_column_row_order_is_turn_order() -> None:
    suite = read_suite(
        _csv("conversation_id,question,condition\nc,first,\nc,second,REGEXP:^2$\n"), "s.csv"
    )
    (case,) = suite.cases
    assert [(t.turn, t.question, t.condition) for t in case.turns] == [
        (1, "first", None),
        (2, "second", ["REGEXP:^2$"]),
    ]


def test_a_turns_cell_holds_a_whole_conversation() -> None:
    doc = [
        {
            "id": "onboarding",
            "categories": ["memory"],
            "role": "HR assistant",
            "turns": [
                {"user": "My name is Ana."},
                {"user": "What is my name?", "expected_answer": "Ana", "expected_tools": []},
            ],
        },
        {"question": "plain", "expected_answer": "x"},
    ]
    suite = read_suite(json.dumps(doc).encode(), "s.json")
    conversation, plain = suite.cases
    assert conversation.case_id == "onboarding" and conversation.metadata["role"] == "HR assistant"
    assert [(t.case_id, t.question, t.expected_answer) for t in conversation.turns] == [
        ("onboarding#1", "My name is Ana.", None),
        ("onboarding#2", "What is my name?", "Ana"),
    ]
    assert plain.question == "plain" and plain.index == 1


def test_a_turns_cell_in_csv_is_json_text_and_conversation_id_names_it() -> None:
    cell = json.dumps([{"user": "a"}, {"user": "b", "expected_answer": "B"}]).replace('"', '""')
    suite = read_suite(_csv(f'conversation_id,turns\nchat,"{cell}"\n'), "s.csv")
    (case,) = suite.cases
    assert case.case_id == "chat" and [t.expected_answer for t in case.turns] == [None, "B"]


def test_turns_of_role_and_content_still_mean_earlier_turns() -> None:
    """``turns`` was an alias of the conversation column: such suites keep working."""
    doc = [{"question": "And next?", "turns": [{"role": "user", "content": "Hi"}]}]
    (case,) = read_suite(json.dumps(doc).encode(), "s.json").cases
    assert not case.is_conversation
    assert [(t.role, t.content) for t in case.conversation] == [("user", "Hi")]


@pytest.mark.parametrize(
    ("text", "row", "column", "says"),
    [
        (
            "conversation_id,question\nc1,a\nc2,b\nc1,c\n",
            4,
            "conversation_id",
            "keep the rows of a conversation together",
        ),
        ("conversation_id,turn,question\nc1,1,a\nc1,1,b\n", 3, "turn", "turn 1 of conversation"),
        ("conversation_id,turn,question\nc1,1,a\nc1,,b\n", 3, "turn", "number every turn"),
        ("conversation_id,turn,question\nc1,1,a\nc1,2,\n", 3, "question", "question is empty"),
        ("turn,question\n1,a\n", 2, "turn", "no conversation_id"),
        ("conversation_id,turn,question\nc1,0,a\n", 2, "turn", "whole number from 1"),
        ("id,conversation_id,question\nt,c1,a\n", 2, "id", "leave id empty"),
        (
            "conversation_id,question,actual_answer\nc1,a,x\n",
            2,
            "actual_answer",
            "cannot carry a logged answer",
        ),
        (
            "conversation_id,question,conversation\nc1,a,\nc1,b,user: hi\n",
            3,
            "conversation",
            "first turn only",
        ),
        (
            "conversation_id,question,role\nc1,a,tutor\nc1,b,pirate\n",
            3,
            "role",
            "give its role once",
        ),
    ],
)
def test_bad_conversation_rows_name_the_row_and_column(
    text: str, row: int, column: str, says: str
) -> None:
    with pytest.raises(SuiteError) as caught:
        read_suite(_csv(text), "bad.csv")
    assert caught.value.row == row
    assert caught.value.column == column
    assert says in caught.value.message


def test_a_conversation_id_that_is_also_a_case_id_is_refused() -> None:
    with pytest.raises(SuiteError, match="ids and conversation ids must be unique"):
        read_suite(_csv("id,conversation_id,question\nc1,,a\n,c1,b\n"), "bad.csv")


@pytest.mark.parametrize(
    ("turns", "says"),
    [
        ([{"user": "a", "question": "b"}], "both 'user' and 'question'"),
        ([{"expected_answer": "x"}], "turns[0] has no user message"),
        ([1], "turn 1 is not an object"),
        ([], "non-empty JSON array"),
        ([{"user": "a", "id": "x"}], "a turn cannot have"),
    ],
)
def test_bad_turns_cells_name_the_turn(turns: list[object], says: str) -> None:
    with pytest.raises(SuiteError) as caught:
        read_suite(json.dumps([{"id": "c", "turns": turns}]).encode(), "bad.json")
    assert says in caught.value.message
    assert caught.value.row == 1


def test_a_turns_row_refuses_per_turn_cells_beside_it() -> None:
    doc = [{"turns": [{"user": "a"}], "expected_answer": "x"}]
    with pytest.raises(SuiteError) as caught:
        read_suite(json.dumps(doc).encode(), "bad.json")
    assert caught.value.column == "expected_answer"
    assert "belongs inside each turn" in caught.value.message


def test_too_many_turns_are_refused() -> None:
    rows = "".join(f"c,q{i}\n" for i in range(MAX_TURNS + 1))
    with pytest.raises(SuiteError, match=f"a conversation may have {MAX_TURNS}"):
        read_suite(_csv("conversation_id,question\n" + rows), "long.csv")


def test_the_template_documents_conversations(tmp_path) -> None:
    sheet = load_workbook(write_template(tmp_path / "t.xlsx"))["Instructions"]
    text = "\n".join(str(c.value) for row in sheet.iter_rows() for c in row if c.value)
    for column in ("conversation_id", "turn", "turns"):
        assert f"\n{column}\n" in f"\n{text}\n"
    assert "one row per turn with the same conversation_id" in text
