"""Header aliases (evalrunner.suite.columns) and cell parsing rules (evalrunner.suite.cells)."""

from __future__ import annotations

import pytest

from evalrunner.errors import SuiteError
from evalrunner.suite.cells import (
    CellError,
    parse_categories,
    parse_condition,
    parse_conversation,
    parse_list,
    parse_text,
)
from evalrunner.suite.columns import (
    ALIASES,
    CANONICAL_COLUMNS,
    canonical_column,
    column_docs,
    map_headers,
    normalise_header,
)


@pytest.mark.parametrize(
    ("header", "canonical"),
    [
        ("Question", "question"),
        ("  user input ", "question"),
        ("PROMPT", "question"),
        ("Expected Answer", "expected_answer"),
        ("expected-answer", "expected_answer"),
        ("Ground Truth", "expected_answer"),
        ("answer_ground_truth", "expected_answer"),
        ("Reference Contexts", "expected_contexts"),
        ("Expected Sources", "expected_documents"),
        ("Intent", "expected_intent"),
        ("tool", "expected_tool"),
        ("Constraint", "condition"),
        ("Tags", "categories"),
        ("History", "conversation"),
        ("Actual Output", "actual_answer"),
        ("Context", "expected_contexts"),
        ("Retrieved Contexts", "retrieved_contexts"),
        ("Answer", None),
        ("Case ID", "id"),
        ("test-id", "id"),
    ],
)
def test_header_aliases_and_normalisation(header: str, canonical: str) -> None:
    assert canonical_column(header) == canonical


def test_unknown_and_blank_headers_are_not_columns() -> None:
    assert canonical_column("Notes") is None
    assert canonical_column(None) is None
    assert normalise_header(" Expected -- Answer ") == "expected_answer"


def test_every_canonical_column_has_aliases_and_docs() -> None:
    assert set(ALIASES) == set(CANONICAL_COLUMNS)
    docs = column_docs()
    assert [d.name for d in docs] == list(CANONICAL_COLUMNS)
    assert [d.name for d in docs if d.required] == ["question"]
    by_name = {d.name: d for d in docs}
    assert "ground_truth" in by_name["expected_answer"].aliases
    assert "JSON" in by_name["condition"].cell_format


def test_map_headers_keeps_unknown_columns_as_extras() -> None:
    hmap = map_headers(["ID", "Prompt", "Notes", None, "Ground Truth"], source="s.xlsx")
    assert hmap.columns == {"id": 0, "question": 1, "expected_answer": 4}
    assert hmap.extras == {2: "Notes"}


def test_two_headers_for_one_column_name_both_and_the_letter() -> None:
    with pytest.raises(SuiteError) as err:
        map_headers(["Question", "Expected Answer", "Ground Truth"], source="s.xlsx", row=1)
    message = str(err.value)
    assert "'Expected Answer'" in message and "'Ground Truth'" in message
    assert "columns B and C" in message
    assert "expected_answer" in message


def test_missing_question_column_lists_found_and_accepted_headers() -> None:
    with pytest.raises(SuiteError) as err:
        map_headers(["Frage", "Expected Answer"], source="s.csv", row=1)
    message = str(err.value)
    assert "'Frage'" in message and "'Expected Answer'" in message
    for alias in ALIASES["question"]:
        assert alias in message


def test_text_cells_convert_numbers_and_empty() -> None:
    assert parse_text(42) == "42"
    assert parse_text(3.0) == "3"
    assert parse_text(2.5) == "2.5"
    assert parse_text("  hi  ") == "hi"
    assert parse_text("   ") is None
    assert parse_text(None) is None


def test_list_cells_json_array_or_lines() -> None:
    assert parse_list('["a, with comma", "b"]') == ["a, with comma", "b"]
    assert parse_list("first chunk\n\n  second chunk \n") == ["first chunk", "second chunk"]
    # A chunk may start with "[": not JSON, so it is read as lines, not refused.
    assert parse_list("[1] Leave policy\n[2] Travel policy") == [
        "[1] Leave policy",
        "[2] Travel policy",
    ]
    assert parse_list([1, "x"]) == ["1", "x"]
    assert parse_list("") == []
    assert parse_list(None) == []
    with pytest.raises(CellError):
        parse_list('[["nested"]]')


def test_categories_json_or_separators() -> None:
    assert parse_categories("hr, leave;policy\nfaq") == ["hr", "leave", "policy", "faq"]
    assert parse_categories('["a,b", "c"]') == ["a,b", "c"]
    assert parse_categories(None) == []


def test_condition_list_form_expression_and_bad_json() -> None:
    assert parse_condition('["15,969", ["Brazil", "REGEXP:[B]razil"]]') == [
        "15,969",
        ["Brazil", "REGEXP:[B]razil"],
    ]
    expression = '("Brazil" OR "brazil") AND regexp("15,?969") AND NOT "Real"'
    assert parse_condition(expression) == expression
    assert parse_condition(["a", ["b", 22]]) == ["a", ["b", "22"]]
    assert parse_condition("[]") is None
    assert parse_condition("") is None
    with pytest.raises(CellError, match="not a valid JSON array"):
        parse_condition('["unterminated", ')
    with pytest.raises(CellError):
        parse_condition('[{"x": 1}]')


def test_condition_single_item_is_a_one_item_list() -> None:
    # Users of the list form write one item without brackets; as an expression it could
    # only fail (expression operands are always quoted).
    assert parse_condition("REGEXP:^No$") == ["REGEXP:^No$"]
    assert parse_condition("regexp:\\d+ days") == ["regexp:\\d+ days"]
    assert parse_condition("No") == ["No"]
    assert parse_condition("25 days") == ["25 days"]
    assert parse_condition(42) == ["42"]
    # A quoted operand means the expression form, kept as written.
    assert parse_condition('"No"') == '"No"'
    assert parse_condition('"a" AND NOT "b"') == '"a" AND NOT "b"'


def test_conversation_json_and_lines() -> None:
    assert parse_conversation(
        '[{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello"}]'
    ) == [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello"}]
    assert parse_conversation("User: I need leave.\nsecond line\nassistant: How long?") == [
        {"role": "user", "content": "I need leave.\nsecond line"},
        {"role": "assistant", "content": "How long?"},
    ]
    assert parse_conversation(None) == []
    with pytest.raises(CellError, match="line 1"):
        parse_conversation("hello there\nuser: hi")
    with pytest.raises(CellError, match="role"):
        parse_conversation('[{"role": "bot", "content": "x"}]')
    with pytest.raises(CellError, match="not a valid JSON array"):
        parse_conversation('[{"role": "user"')


def test_column_letters_are_openpyxls() -> None:
    """The readers name cells with XlsxWriter's letters instead of importing openpyxl at
    start-up: the same letters as openpyxl's for every column Excel has (A to XFD)."""
    from openpyxl.utils import get_column_letter

    from evalrunner.suite.columns import column_letter

    for number in range(1, 16_385):
        assert column_letter(number) == get_column_letter(number), number
    assert (column_letter(1), column_letter(27), column_letter(16_384)) == ("A", "AA", "XFD")
