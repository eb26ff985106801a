"""Write the xlsx suite template, or a suite built from Python data, that the readers accept.

The template is how most users start a suite, so it teaches the format in place: canonical
headers, an input message on every column (Excel shows it when a cell is selected), a
validation that refuses an empty question, example rows covering the list, condition and
conversation formats, and an Instructions sheet generated from the same column table the
reader uses (:func:`evalrunner.suite.columns.column_docs`), so help and parser cannot drift.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Final

from openpyxl import Workbook
from openpyxl.styles import Alignment, Font, PatternFill
from openpyxl.utils import get_column_letter
from openpyxl.worksheet.datavalidation import DataValidation
from openpyxl.worksheet.worksheet import Worksheet
from pydantic import BaseModel

from evalrunner.suite.columns import (
    CANONICAL_COLUMNS,
    GENERAL_RULES,
    canonical_column,
    column_docs,
)

SUITE_SHEET: Final = "Suite"
INSTRUCTIONS_SHEET: Final = "Instructions"

#: Example cases of the template: one per cell format worth showing.
EXAMPLE_ROWS: Final[tuple[dict[str, Any], ...]] = (
    {
        "id": "leave-001",
        "question": "How many days of annual leave do full-time employees get?",
        "expected_answer": "Full-time employees get 25 days of paid annual leave per year.",
        "expected_contexts": [
            "Full-time employees are entitled to 25 days of paid annual leave per calendar year."
        ],
        "expected_documents": ["leave-policy.md"],
        "expected_intent": "leave_policy",
        "expected_tool": "search_policies",
        "condition": '"25" AND ("days" OR "day")',
        "categories": ["hr", "leave"],
    },
    {
        "id": "expenses-001",
        "question": "What is the daily meal allowance on a business trip?",
        "expected_answer": "The meal allowance is 40 EUR per day on business trips.",
        "expected_documents": ["travel-expenses.md"],
        "expected_intent": "expenses_policy",
        "expected_tool": "search_policies",
        "condition": ["40", ["EUR", "euro", "€"]],
        "categories": ["hr", "expenses"],
    },
    {
        "id": "leave-002",
        "question": "Can I carry the unused days over to next year?",
        "expected_answer": "Up to 5 unused days can be carried over to the next year.",
        "expected_documents": ["leave-policy.md"],
        "expected_intent": "leave_policy",
        "condition": ["5", "REGEXP:carr(y|ied) over"],
        "categories": ["hr", "leave", "multi-turn"],
        "conversation": [
            {"role": "user", "content": "I have 7 days of leave left this year."},
            {"role": "assistant", "content": "Noted. How can I help with them?"},
        ],
    },
)

_WIDTHS: Final[dict[str, int]] = {
    "id": 14,
    "question": 48,
    "expected_answer": 48,
    "expected_contexts": 48,
    "expected_documents": 24,
    "expected_intent": 18,
    "expected_tool": 18,
    "condition": 34,
    "categories": 20,
    "conversation": 44,
    "actual_answer": 40,
    "retrieved_contexts": 40,
}
_HEADER_FONT = Font(bold=True, color="FFFFFF")
_HEADER_FILL = PatternFill("solid", fgColor="1F4E78")
_WRAP = Alignment(wrap_text=True, vertical="top")
#: Rows below the header that carry the validations and input messages.
_VALIDATED_ROWS: Final = 1000


def write_template(
    path: str | os.PathLike[str], rows: Sequence[Mapping[str, Any]] | None = None
) -> Path:
    """Write the suite template to ``path``; ``rows`` replace the example cases.

    Rows are dicts keyed by canonical column names (``question``, ``expected_answer``, ...);
    list values (and conversation turns) are written as JSON arrays, which the reader parses
    back unchanged. Keys that are not canonical columns become extra columns, kept by the
    reader as case metadata; an alias key (``prompt`` for ``question``) is refused because it
    would read back as a second question column.
    """
    data = list(EXAMPLE_ROWS if rows is None else rows)
    headers = _headers(data)
    workbook = Workbook()
    sheet = workbook.active
    assert sheet is not None
    sheet.title = SUITE_SHEET
    _write_suite_sheet(sheet, headers, data)
    _write_instructions(workbook.create_sheet(INSTRUCTIONS_SHEET))
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    workbook.save(target)
    return target


def write_suite_xlsx(path: str | os.PathLike[str], rows: Sequence[Mapping[str, Any]]) -> Path:
    """Write a suite of ``rows`` in the template's layout (e.g. ``test_suites/demo-hr.xlsx``).

    Same as :func:`write_template` with rows, but an empty list is an error rather than a
    template without cases, since a suite with no cases cannot be read back.
    """
    if not rows:
        raise ValueError("write_suite_xlsx needs at least one row")
    return write_template(path, rows)


def _headers(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    extras: list[str] = []
    for number, row in enumerate(rows, start=1):
        question = row.get("question")
        if question is None or not str(question).strip():
            raise ValueError(f"row {number} has no question; every case needs one")
        for key in row:
            if key in CANONICAL_COLUMNS or key in extras:
                continue
            canonical = canonical_column(key)
            if canonical is not None:
                raise ValueError(
                    f"row {number}: key '{key}' is an alias of '{canonical}'; use the "
                    "canonical column name"
                )
            extras.append(key)
    return [*CANONICAL_COLUMNS, *extras]


def _cell_value(value: Any) -> Any:
    """Render a value as the reader expects it: lists and objects as JSON, text as is."""
    if isinstance(value, BaseModel):
        value = value.model_dump()
    if isinstance(value, list | tuple):
        items = [v.model_dump() if isinstance(v, BaseModel) else v for v in value]
        return json.dumps(items, ensure_ascii=False) if items else None
    if isinstance(value, dict):
        return json.dumps(value, ensure_ascii=False)
    return value


def _write_suite_sheet(
    sheet: Worksheet, headers: list[str], rows: Sequence[Mapping[str, Any]]
) -> None:
    for col, name in enumerate(headers, start=1):
        cell = sheet.cell(row=1, column=col, value=name)
        cell.font = _HEADER_FONT
        cell.fill = _HEADER_FILL
        cell.alignment = _WRAP
        sheet.column_dimensions[get_column_letter(col)].width = _WIDTHS.get(name, 20)
    for r, row in enumerate(rows, start=2):
        for col, name in enumerate(headers, start=1):
            cell = sheet.cell(row=r, column=col, value=_cell_value(row.get(name)))
            if isinstance(cell.value, str) and cell.value.startswith("="):
                cell.data_type = "s"  # text that looks like a formula stays text
            cell.alignment = _WRAP
    sheet.freeze_panes = "A2"
    sheet.auto_filter.ref = f"A1:{get_column_letter(len(headers))}{max(len(rows), 1) + 1}"
    _add_validations(sheet, headers, last_row=max(_VALIDATED_ROWS, len(rows) + 1))


def _add_validations(sheet: Worksheet, headers: list[str], *, last_row: int) -> None:
    """An input message on each known column; the question column also refuses blanks.

    Excel caps an input message at 255 characters and its title at 32, hence the clipping.
    """
    docs = {doc.name: doc for doc in column_docs()}
    for col, name in enumerate(headers, start=1):
        doc = docs.get(name)
        if doc is None:
            continue
        letter = get_column_letter(col)
        if name == "question":
            validation = DataValidation(
                type="custom",
                formula1=f"LEN(TRIM({letter}2))>0",
                allow_blank=False,
                showErrorMessage=True,
                errorStyle="stop",
                errorTitle="Question required",
                error="Every test case needs a question: the text sent to the target.",
            )
        else:
            validation = DataValidation(allow_blank=True)
        validation.showInputMessage = True
        validation.promptTitle = name[:32]
        validation.prompt = _clip(f"{doc.description} {doc.cell_format}", 255)
        validation.add(f"{letter}2:{letter}{last_row}")
        sheet.add_data_validation(validation)


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _write_instructions(sheet: Worksheet) -> None:
    # The first row must not hold a question header, or the reader would take this sheet.
    sheet.cell(row=1, column=1, value="How to fill in the test suite").font = Font(
        bold=True, size=14
    )
    r = 3
    for rule in GENERAL_RULES:
        sheet.cell(row=r, column=1, value=f"• {rule}")
        r += 1
    r += 1
    table = ("Column", "Required", "Also accepted headers", "What it holds", "Cell format")
    widths = (22, 10, 40, 60, 70, 44)
    for col, (title, width) in enumerate(zip((*table, "Example"), widths, strict=True), 1):
        cell = sheet.cell(row=r, column=col, value=title)
        cell.font = _HEADER_FONT
        cell.fill = _HEADER_FILL
        sheet.column_dimensions[get_column_letter(col)].width = width
    for doc in column_docs():
        r += 1
        values = (
            doc.name,
            "yes" if doc.required else "no",
            ", ".join(doc.aliases),
            doc.description,
            doc.cell_format,
            doc.example or None,
        )
        for col, value in enumerate(values, start=1):
            sheet.cell(row=r, column=col, value=value).alignment = _WRAP
        sheet.cell(row=r, column=1).font = Font(bold=True)
