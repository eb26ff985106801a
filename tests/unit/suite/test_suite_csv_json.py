"""Reading csv and json suites, including the H2O Eval Studio test-suite and test-lab JSON."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from evalrunner.errors import SuiteError
from evalrunner.suite import read_suite, read_suite_file


def as_json(doc: Any) -> bytes:
    return json.dumps(doc).encode()


# ------------------------------------------------------------------------------------ csv


def test_csv_semicolon_delimiter_and_bom() -> None:
    text = (
        "Question;Expected Answer;Categories;Notes\n"
        '"How many days, exactly?";"25 days, paid";hr, leave;n1\n'
        "\n"
        "Second?;;;\n"
    )
    suite = read_suite(b"\xef\xbb\xbf" + text.encode(), "exports/hr-suite.csv")
    assert suite.name == "hr-suite"
    first, second = suite.cases
    assert first.question == "How many days, exactly?"
    assert first.expected_answer == "25 days, paid"
    assert first.categories == ["hr", "leave"]
    assert first.metadata == {"Notes": "n1"}
    assert (first.row, second.row) == (2, 4)
    assert second.expected_answer is None and second.metadata == {"Notes": None}


def test_csv_tab_and_comma_delimiters() -> None:
    tab = read_suite(b"prompt\tground_truth\nQ, with comma\tA; with semicolon\n", "a.csv")
    assert tab.cases[0].question == "Q, with comma"
    assert tab.cases[0].expected_answer == "A; with semicolon"
    comma = read_suite(b'question,condition\nQ,"[""a"", [""b"", ""c""]]"\n', "b.csv")
    assert comma.cases[0].condition == ["a", ["b", "c"]]


def test_csv_multiline_cells_and_conversation() -> None:
    data = b'question,conversation,expected_contexts\n"Q","user: hi\nassistant: hello","c1\nc2"\n'
    case = read_suite(data, "a.csv").cases[0]
    assert [(t.role, t.content) for t in case.conversation] == [
        ("user", "hi"),
        ("assistant", "hello"),
    ]
    assert case.expected_contexts == ["c1", "c2"]


def test_csv_missing_question_column_lists_headers() -> None:
    with pytest.raises(SuiteError) as err:
        read_suite(b"Frage;Antwort\nx;y\n", "a.csv")
    message = str(err.value)
    assert "'Frage'" in message and "'Antwort'" in message and "user_input" in message


def test_csv_empty_and_not_utf8() -> None:
    with pytest.raises(SuiteError, match="the suite has no test cases"):
        read_suite(b"question,expected_answer\n\n", "a.csv")
    with pytest.raises(SuiteError, match="the suite has no test cases"):
        read_suite(b"", "a.csv")
    with pytest.raises(SuiteError, match="UTF-8"):
        read_suite("question\nCafé\n".encode("cp1252"), "a.csv")


def test_csv_empty_question_has_row_and_column() -> None:
    with pytest.raises(SuiteError) as err:
        read_suite(b"id,query\n1,Q1\n2,\n", "a.csv")
    assert "row 3" in str(err.value) and "column 'query'" in str(err.value)


# ------------------------------------------------------------------------------ extension


@pytest.mark.parametrize("name", ["suite.txt", "suite.xls", "suite"])
def test_unsupported_extension_lists_supported_formats(name: str) -> None:
    with pytest.raises(SuiteError) as err:
        read_suite(b"question\nQ\n", name)
    for ext in (".xlsx", ".xlsm", ".csv", ".json"):
        assert ext in str(err.value)


def test_read_suite_file_reads_by_extension_and_reports_missing(tmp_path: Path) -> None:
    path = tmp_path / "S.JSON"
    path.write_bytes(as_json([{"question": "Q"}]))
    assert read_suite_file(path).cases[0].question == "Q"
    with pytest.raises(SuiteError, match="cannot read the file"):
        read_suite_file(tmp_path / "missing.csv")


# ----------------------------------------------------------------------------------- json


def test_json_list_of_rows_with_aliases_and_metadata() -> None:
    doc = [
        {
            "case_id": "c1",
            "user_input": "Q1",
            "reference": "A1",
            "reference_contexts": ["ctx"],
            "tags": "x; y",
            "condition": ["a", ["b", "c"]],
            "history": [{"role": "user", "content": "hi"}],
            "owner": "me",
        },
        {"question": "Q2", "expected_documents": "doc-a\ndoc-b", "condition": '"a" OR "b"'},
    ]
    first, second = read_suite(as_json(doc), "s.json").cases
    assert (first.case_id, first.question, first.expected_answer) == ("c1", "Q1", "A1")
    assert first.expected_contexts == ["ctx"]
    assert first.categories == ["x", "y"]
    assert first.condition == ["a", ["b", "c"]]
    assert first.conversation[0].role == "user"
    assert first.metadata == {"owner": "me"}
    assert first.row == 1 and second.row == 2
    assert second.case_id == "case-0002"
    assert second.expected_documents == ["doc-a", "doc-b"]
    assert second.condition == '"a" OR "b"'


def test_json_cases_object() -> None:
    suite = read_suite(as_json({"name": "x", "cases": [{"prompt": "Q", "id": 5}]}), "s.json")
    assert suite.cases[0].case_id == "5" and suite.cases[0].question == "Q"


@pytest.mark.parametrize(
    ("doc", "needle"),
    [
        ([], "the suite has no test cases"),
        ({"cases": []}, "the suite has no test cases"),
        ({"cases": "nope"}, "must be a list"),
        ({"rows": []}, "unrecognised JSON suite"),
        ("just a string", "unrecognised JSON suite"),
        ([{"question": "Q"}, "not an object"], "item 2"),
        ([{"question": "Q", "prompt": "P"}], "keys 'question' and 'prompt'"),
        ([{"answer": "A"}], "no question column"),
        ([{"question": "Q", "conversation": [{"role": "robot", "content": "x"}]}], "role"),
    ],
)
def test_json_errors(doc: Any, needle: str) -> None:
    with pytest.raises(SuiteError, match=needle):
        read_suite(as_json(doc), "s.json")


def test_json_empty_question_and_duplicate_ids() -> None:
    with pytest.raises(SuiteError) as err:
        read_suite(as_json({"cases": [{"question": "Q"}, {"prompt": ""}]}), "s.json")
    assert "row 2" in str(err.value) and "'prompt'" in str(err.value)
    assert "cases[1]" in str(err.value)
    with pytest.raises(SuiteError, match=r"row 1 .*row 2"):
        read_suite(as_json([{"id": "a", "question": "Q"}, {"id": "a", "question": "R"}]), "s.json")


def test_invalid_json_reports_line() -> None:
    with pytest.raises(SuiteError, match=r"not valid JSON.*line 2"):
        read_suite(b'[\n{"question": }]', "s.json")


# ----------------------------------------------------------------- H2O Eval Studio shapes

H2O_SUITE = {
    "name": "Sample Test Suite",
    "description": "Shape of the Eval Studio import example and the h2o-sonar test suites.",
    "tests": [
        {
            "key": "test-1",
            "documents": ["https://example.com/report.pdf"],
            "test_cases": [
                {
                    "key": "tc-1",
                    "prompt": "What was the revenue of Brazil?",
                    "categories": ["question_answering"],
                    "expected_output": "Brazil revenue was 15,969 million.",
                    "constraints": ["15,969", "REGEXP:15?,969 [Mm]illion", ["BRAZIL", "Brazil"]],
                },
                {
                    "key": "tc-2",
                    "prompt": "Who is the chairman?",
                    "constraints": ["Cappi"],
                    "condition": '"Cappi" AND NOT "CEO"',
                    "relationships": [
                        {
                            "type": "perturbation_source",
                            "target": "tc-1",
                            "target_type": "test_case",
                        }
                    ],
                },
            ],
        },
        {"documents": [], "test_cases": [{"prompt": "Say hi.", "constraints": []}]},
    ],
}


def test_h2o_test_suite() -> None:
    suite = read_suite(as_json(H2O_SUITE), "h2o-suite.json")
    first, second, third = suite.cases
    assert first.case_id == "tc-1"
    assert first.question == "What was the revenue of Brazil?"
    assert first.expected_answer == "Brazil revenue was 15,969 million."
    assert first.categories == ["question_answering"]
    assert first.condition == ["15,969", "REGEXP:15?,969 [Mm]illion", ["BRAZIL", "Brazil"]]
    assert first.metadata == {"test_key": "test-1", "corpus": ["https://example.com/report.pdf"]}
    assert first.expected_documents == []  # the corpus is not per-case ground truth
    # the expression wins; the list form is kept, not dropped
    assert second.condition == '"Cappi" AND NOT "CEO"'
    assert second.metadata["constraints"] == ["Cappi"]
    assert second.metadata["relationships"][0]["type"] == "perturbation_source"
    assert third.case_id == "case-0003" and third.condition is None
    assert [c.row for c in suite.cases] == [1, 2, 3]


def test_h2o_test_suite_errors_name_the_case() -> None:
    doc = {"tests": [{"test_cases": [{"prompt": "Q"}, {"prompt": " "}]}]}
    with pytest.raises(SuiteError, match=r"tests\[0\]\.test_cases\[1\]"):
        read_suite(as_json(doc), "s.json")
    with pytest.raises(SuiteError, match="the suite has no test cases"):
        read_suite(as_json({"tests": [{"test_cases": []}]}), "s.json")


def lab_input(key: str, question: str, model: str, answer: str, **extra: Any) -> dict[str, Any]:
    row = {
        "key": key,
        "input": question,
        "corpus": [],
        "context": [f"context for {question}"] if answer else [],
        "categories": ["question_answering"],
        "relationships": [],
        "expected_output": f"expected {question}",
        "output_constraints": ["x"],
        "output_condition": "",
        "actual_output": answer,
        "actual_duration": 1.5,
        "cost": 0.0,
        "model_key": model,
    }
    row.update(extra)
    return row


def test_h2o_test_lab_one_model_per_case_keeps_every_row() -> None:
    # Like h2o-sonar's ci_rag_test_lab_bedrock.json: one model per corpus.
    doc = {
        "name": "TestLab",
        "raw_dataset": {
            "inputs": [lab_input("k1", "Q1", "m1", ""), lab_input("k2", "Q2", "m2", "")]
        },
        "dataset": {
            "inputs": [
                lab_input("k1", "Q1", "m1", "A1"),
                lab_input("k2", "Q2", "m2", "", output_condition='"x" OR "y"'),
            ]
        },
        "models": [
            {"key": "m1", "name": "RAG one", "llm_model_name": "claude"},
            {"key": "m2", "name": "RAG two"},
        ],
    }
    first, second = read_suite(as_json(doc), "lab.json").cases
    assert (first.case_id, first.question, first.answer) == ("k1", "Q1", "A1")
    assert first.contexts == ["context for Q1"]
    assert first.expected_answer == "expected Q1"
    assert first.condition == ["x"]
    assert first.metadata["model"] == "claude"
    assert first.metadata["model_key"] == "m1"
    assert first.metadata["actual_duration"] == 1.5
    assert "other_models" not in first.metadata
    # empty actual_output: no answer, so the target is called and contexts are unknown
    assert second.answer is None and second.contexts is None
    assert second.condition == '"x" OR "y"'
    assert second.metadata["output_constraints"] == ["x"]
    assert second.metadata["model"] == "RAG two"


def test_h2o_test_lab_several_models_keeps_the_first_listed_model() -> None:
    # Like h2o-sonar's dummy_*_test_lab_small.json: each input answered by two models,
    # rows without keys, the second model's row sometimes first.
    inputs = [
        lab_input("", "How are you?", "m2", "B1"),
        lab_input("", "How are you?", "m1", "A1"),
        lab_input("", "Bye?", "m1", "A2"),
        lab_input("", "Bye?", "m2", "B2"),
    ]
    for row in inputs:
        del row["key"]
    doc = {
        "dataset": {"inputs": inputs},
        "models": [{"key": "m1", "name": "smart"}, {"key": "m2", "name": "donkey"}],
    }
    suite = read_suite(as_json(doc), "lab.json")
    assert [(c.question, c.answer, c.row) for c in suite.cases] == [
        ("How are you?", "A1", 2),
        ("Bye?", "A2", 3),
    ]
    assert [c.case_id for c in suite.cases] == ["case-0001", "case-0002"]
    assert suite.cases[0].metadata["model"] == "smart"
    assert suite.cases[0].metadata["other_models"] == ["donkey"]


def test_h2o_test_lab_compound_keys_and_raw_dataset_only() -> None:
    doc = {
        "dataset": {"inputs": []},
        "raw_dataset": {
            "inputs": [
                lab_input("tc1_m1", "Q1", "m1", ""),
                lab_input("tc1_m2", "Q1", "m2", ""),
                lab_input("x", "Q2", "m1", "", test_case_key="tc2"),
            ]
        },
        "models": [{"key": "m1"}, {"key": "m2"}],
    }
    suite = read_suite(as_json(doc), "lab.json")
    assert [c.case_id for c in suite.cases] == ["tc1", "tc2"]
    assert all(c.answer is None for c in suite.cases)


def test_llm_dataset_inputs_and_missing_inputs() -> None:
    suite = read_suite(as_json({"inputs": [{"input": "Q", "actual_output": "A"}]}), "d.json")
    assert suite.cases[0].answer == "A" and suite.cases[0].contexts is None
    with pytest.raises(SuiteError, match="no 'inputs' list"):
        read_suite(as_json({"inputs": "nope"}), "d.json")


def test_a_json_cell_is_cleaned_before_and_after_parsing_with_one_note_per_column() -> None:
    """A raw control character and an escaped one (``\\u0000``, a NUL only once the JSON is
    parsed) in one list cell: both replaced, counted together in the column's one note."""
    cell = '"[""a\x01b"", ""c\\u0000d""]"'
    data = f"question,expected_contexts,owner\nq?,{cell},x\x02\n".encode()
    case = read_suite(data, "s.csv").cases[0]
    assert case.expected_contexts == ["a\ufffdb", "c\ufffdd"]
    assert case.metadata == {"owner": "x\ufffd"}
    assert case.notes == [
        "suite row 2, column expected_contexts: 2 control characters replaced by U+FFFD",
        "suite row 2, column owner: 1 control character replaced by U+FFFD",
    ]
