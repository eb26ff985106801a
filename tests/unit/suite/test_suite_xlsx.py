"""Reading xlsx suites, and the template written by evalrunner.suite.template."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from openpyxl import Workbook, load_workbook

from evalrunner.errors import SuiteError
from evalrunner.suite import read_suite, read_suite_file, write_suite_xlsx, write_template
from evalrunner.suite.columns import CANONICAL_COLUMNS
from evalrunner.suite.template import EXAMPLE_ROWS


def xlsx_bytes(*sheets: tuple[str, list[list[object]]]) -> bytes:
    workbook = Workbook()
    workbook.remove(workbook.active)
    for title, rows in sheets:
        sheet = workbook.create_sheet(title)
        for row in rows:
            sheet.append(row)
    buffer = io.BytesIO()
    workbook.save(buffer)
    return buffer.getvalue()


def test_template_round_trip_yields_the_example_cases(tmp_path: Path) -> None:
    path = write_template(tmp_path / "template.xlsx")
    suite = read_suite_file(path)
    assert suite.name == "template"
    assert len(suite.cases) == len(EXAMPLE_ROWS) == 3
    for index, (case, row) in enumerate(zip(suite.cases, EXAMPLE_ROWS, strict=True)):
        assert case.index == index
        assert case.row == index + 2
        dumped = case.model_dump()
        assert dumped["case_id"] == row["id"]
        for column, value in row.items():
            if column != "id":
                assert dumped[column] == value, column
        assert case.answer is None and case.contexts is None


def test_template_layout_header_validation_and_instructions(tmp_path: Path) -> None:
    workbook = load_workbook(write_template(tmp_path / "t.xlsx"))
    assert workbook.sheetnames == ["Suite", "Instructions"]
    sheet = workbook["Suite"]
    assert sheet["A1"].value == "id" and sheet["B1"].value == "question"
    assert sheet["B1"].font.bold
    assert sheet.freeze_panes == "A2"
    validations = {str(v.sqref): v for v in sheet.data_validations.dataValidation}
    question = validations["B2:B1000"]
    assert question.type == "custom" and not question.allow_blank
    assert "LEN(TRIM(B2))" in question.formula1
    assert all(v.prompt and len(v.prompt) <= 255 for v in validations.values())
    assert len(validations) == len(CANONICAL_COLUMNS)  # one input message per column
    text = " ".join(
        str(c) for row in workbook["Instructions"].iter_rows(values_only=True) for c in row if c
    )
    for needle in (
        "ground_truth",
        "user_input",
        "REGEXP:",
        "assistant:",
        "retrieved_contexts",
        "variant_of",
    ):
        assert needle in text


def test_write_suite_xlsx_with_rows_and_extra_columns(tmp_path: Path) -> None:
    rows = [
        {
            "question": "Q1?",
            "expected_contexts": ["a", "b"],
            "conversation": [{"role": "user", "content": "hi"}],
            "owner": "team-hr",
        },
        {"question": "=looks like a formula", "actual_answer": "A", "retrieved_contexts": []},
    ]
    suite = read_suite_file(write_suite_xlsx(tmp_path / "s.xlsx", rows))
    first, second = suite.cases
    assert first.case_id == "case-0001" and second.case_id == "case-0002"
    assert first.expected_contexts == ["a", "b"]
    assert first.conversation[0].content == "hi"
    assert first.metadata == {"owner": "team-hr"}
    assert second.question == "=looks like a formula"
    assert second.answer == "A"
    with pytest.raises(ValueError, match="alias"):
        write_suite_xlsx(tmp_path / "x.xlsx", [{"prompt": "Q?", "question": "Q?"}])
    with pytest.raises(ValueError):
        write_suite_xlsx(tmp_path / "y.xlsx", [])


def test_instructions_sheet_first_is_skipped() -> None:
    data = xlsx_bytes(
        ("Instructions", [["Read me first"], ["question: the text sent to the target"]]),
        ("Cases", [["Prompt", "Ground Truth"], ["What is 2+2?", "4"]]),
    )
    suite = read_suite(data, "s.xlsx")
    assert [c.question for c in suite.cases] == ["What is 2+2?"]
    assert suite.cases[0].expected_answer == "4"


def test_no_sheet_with_a_question_header_names_sheets_and_aliases() -> None:
    data = xlsx_bytes(("Notes", [["Title"]]), ("Data", [["Frage", "Antwort"], ["x", "y"]]))
    with pytest.raises(SuiteError) as err:
        read_suite(data, "s.xlsx")
    message = str(err.value)
    assert "'Notes'" in message and "'Data'" in message and "'Frage'" in message
    assert "user_input" in message and "prompt" in message


@pytest.mark.parametrize(
    "data",
    [b"", b"not a zip at all", b"PK\x03\x04garbage", xlsx_bytes(("S", [["q"]]))[:200]],
)
def test_corrupt_xlsx_is_a_suite_error(data: bytes) -> None:
    with pytest.raises(SuiteError, match="not a readable xlsx"):
        read_suite(data, "broken.xlsx")


def test_csv_bytes_named_xlsx_is_a_suite_error() -> None:
    with pytest.raises(SuiteError, match="not a readable xlsx"):
        read_suite(b"question\nhello\n", "suite.xlsm")


def test_empty_question_names_row_and_column() -> None:
    data = xlsx_bytes(("Suite", [["ID", "User Input"], ["a", "Q1"], [], ["b", "   "], ["c", "Q3"]]))
    with pytest.raises(SuiteError) as err:
        read_suite(data, "s.xlsx")
    message = str(err.value)
    assert "sheet 'Suite'" in message
    assert "row 4" in message
    assert "column 'User Input'" in message
    assert "cell B4" in message


def test_blank_rows_are_skipped_and_rows_keep_spreadsheet_numbers() -> None:
    data = xlsx_bytes(
        ("Suite", [[], ["question", "notes"], ["Q1", None], [None, None], ["Q2", "n"]])
    )
    suite = read_suite(data, "s.xlsx")
    assert [(c.index, c.row, c.case_id) for c in suite.cases] == [
        (0, 3, "case-0001"),
        (1, 5, "case-0002"),
    ]
    assert suite.cases[1].metadata == {"notes": "n"}


def test_header_only_sheet_is_an_empty_suite() -> None:
    with pytest.raises(SuiteError, match="the suite has no test cases"):
        read_suite(xlsx_bytes(("Suite", [["question", "expected_answer"]])), "s.xlsx")


def test_integers_in_cells_become_text() -> None:
    data = xlsx_bytes(("Suite", [["id", "question", "expected_answer", "tags"], [7, 12, 3.0, 5]]))
    case = read_suite(data, "s.xlsx").cases[0]
    assert (case.case_id, case.question, case.expected_answer) == ("7", "12", "3")
    assert case.categories == ["5"]


def test_duplicate_ids_name_both_rows() -> None:
    data = xlsx_bytes(("Suite", [["Case ID", "question"], ["x", "Q1"], ["y", "Q2"], ["x", "Q3"]]))
    with pytest.raises(SuiteError) as err:
        read_suite(data, "s.xlsx")
    message = str(err.value)
    assert "'x'" in message and "row 2" in message and "row 4" in message


def test_duplicate_headers_in_a_sheet() -> None:
    data = xlsx_bytes(("Suite", [["question", "prompt"], ["a", "b"]]))
    with pytest.raises(SuiteError, match="columns A and B"):
        read_suite(data, "s.xlsx")


def test_bad_condition_cell_is_named() -> None:
    data = xlsx_bytes(("Suite", [["question", "condition"], ["Q", '["a", ["b"]']]))
    with pytest.raises(SuiteError) as err:
        read_suite(data, "s.xlsx")
    message = str(err.value)
    assert "row 2" in message and "column 'condition'" in message and "cell B2" in message


def test_precomputed_answers_and_contexts() -> None:
    data = xlsx_bytes(
        (
            "Suite",
            [
                ["question", "actual_output", "retrieved_contexts"],
                ["Q1", "A1", "chunk 1\nchunk 2"],
                ["Q2", "A2", None],
                ["Q3", None, None],
            ],
        )
    )
    first, second, third = read_suite(data, "s.xlsx").cases
    assert first.answer == "A1" and first.contexts == ["chunk 1", "chunk 2"]
    assert second.answer == "A2" and second.contexts == []  # answered, nothing retrieved
    assert third.answer is None and third.contexts is None  # the target will be called


def test_template_with_instructions_moved_first_still_reads(tmp_path: Path) -> None:
    workbook = load_workbook(write_template(tmp_path / "t.xlsx"))
    workbook.move_sheet("Instructions", offset=-1)
    assert workbook.sheetnames == ["Instructions", "Suite"]
    moved = tmp_path / "moved.xlsx"
    workbook.save(moved)
    suite = read_suite(moved.read_bytes(), "moved.xlsx")
    assert [c.case_id for c in suite.cases] == [row["id"] for row in EXAMPLE_ROWS]
