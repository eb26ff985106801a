"""Workbooks that openpyxl opens wrongly or not at all, recognised so the user gets the cause
and the fix instead of a zip error or, worse, silently missing cells.

- A **password-protected** (encrypted) workbook is not a zip at all: Office wraps the
  encrypted package in an OLE compound file (the container of the old ``.xls`` format too),
  recognised by its magic bytes.
- A **formula without a saved value**: openpyxl does not compute formulas; with
  ``data_only=True`` it reads the value the last spreadsheet app saved with the formula.
  Files written by a library (openpyxl, pandas) carry the formula only, and the cell reads as
  empty: a question or an expected answer would vanish without a word.
"""

from __future__ import annotations

import io
import re
import zipfile
from typing import TYPE_CHECKING, Final

from evalrunner.errors import SuiteError
from evalrunner.suite.columns import column_letter

if TYPE_CHECKING:
    from openpyxl.worksheet.worksheet import Worksheet

#: The first bytes of an OLE compound file (CFB): encrypted OOXML, and the legacy .xls.
OLE_MAGIC: Final = bytes.fromhex("D0CF11E0A1B11AE1")

#: The stream an encrypted OOXML file keeps its workbook in (directory names are UTF-16LE).
_ENCRYPTED_STREAM: Final = "EncryptedPackage".encode("utf-16-le")

#: A formula element in a worksheet's XML, with or without a namespace prefix. Only a cheap
#: pre-check: openpyxl then says which cells hold formulas.
_FORMULA_ELEMENT: Final = re.compile(rb"<(?:[A-Za-z_][\w.-]*:)?f[\s/>]")


def refuse_ole_container(data: bytes, *, source: str) -> None:
    """Raise :class:`SuiteError` for an encrypted workbook or a legacy ``.xls`` in disguise."""
    if not data.startswith(OLE_MAGIC):
        return
    if _ENCRYPTED_STREAM in data:
        raise SuiteError(
            "the workbook is password-protected (encrypted), so it cannot be read; open it in "
            "Excel, remove the password (File > Info > Protect Workbook > Encrypt with "
            "Password, clear the password) and save it, or export the suite as CSV UTF-8",
            source=source,
        )
    raise SuiteError(
        "the file is an Excel 97-2003 workbook (.xls) or another OLE document, not an xlsx "
        "workbook; open it in Excel and save it as 'Excel Workbook (.xlsx)', or export the "
        "suite as CSV UTF-8",
        source=source,
    )


def _shorten(formula: object, limit: int = 60) -> str:
    text = str(formula)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _may_hold_formulas(data: bytes) -> bool:
    """Whether any worksheet of the xlsx ``data`` has a formula element (cheap: no parsing)."""
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        return any(
            _FORMULA_ELEMENT.search(archive.read(name))
            for name in archive.namelist()
            if name.startswith("xl/worksheets/") and name.endswith(".xml")
        )


def refuse_formulas_without_values(
    data: bytes, sheet: Worksheet, *, source: str, header_row: int | None = None
) -> None:
    """Raise :class:`SuiteError` naming the first cell of ``sheet`` (loaded with
    ``data_only=True`` from ``data``) that holds a formula but no saved value; the column is
    named by its header in ``header_row`` when there is one.

    A formula whose saved value is an empty string is fine: Excel marks it as a string
    (``t="str"``), which openpyxl keeps as the cell's type; an uncomputed one has none."""
    if not _may_hold_formulas(data):
        return
    found = _first_formula_without_value(data, sheet)
    if found is None:
        return
    row, column, formula = found
    label = sheet.cell(header_row, column).value if header_row else None
    letter = column_letter(column)
    raise SuiteError(
        f"cell {letter}{row} holds a formula ({_shorten(formula)}) with no saved value, so its "
        "text cannot be read: the file was written by a program that does not compute "
        "formulas. Open the file in Excel or LibreOffice and save it (that stores the values), "
        "or replace the formulas with their values (copy, then Paste Values)",
        source=source,
        sheet=sheet.title,
        row=row,
        column=str(label).strip() if label else letter,
    )


def _first_formula_without_value(data: bytes, sheet: Worksheet) -> tuple[int, int, str] | None:
    """(row, column, formula) of the first formula cell of ``sheet`` that has no saved value."""
    import openpyxl  # with a workbook only: its __init__ is heavy (see columns.column_letter)

    formulas = openpyxl.load_workbook(io.BytesIO(data), read_only=True, data_only=False)
    try:
        for line in formulas[sheet.title].iter_rows():
            for cell in line:
                if cell.data_type != "f":
                    continue
                saved = sheet.cell(row=cell.row, column=cell.column)
                if saved.value is None and saved.data_type != "str":
                    return cell.row, cell.column, str(cell.value)
        return None
    finally:
        formulas.close()
