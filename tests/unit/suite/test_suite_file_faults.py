"""Suite files that used to lose cases without a word, or fail with a library's error: an
unclosed CSV quote, UTF-16 and other encodings, formulas without saved values, encrypted
workbooks. Each is read correctly or refused with the file, row, column, cause and fix."""

from __future__ import annotations

import codecs
import io
import zipfile

import pytest
from openpyxl import Workbook

from evalrunner.errors import SuiteError
from evalrunner.suite import read_suite

# ------------------------------------------------------------------------- unclosed quotes

#: The issue's example: two cases, the first with an unclosed quote. csv's default (lenient)
#: mode read it as ONE case whose question was the rest of the file, and the run exited 0.
UNCLOSED = b'question,expected_answer\n"What is 2+2?,4\nWhat is the capital of France?,Paris\n'


def test_unclosed_quote_is_refused_with_the_row_and_column_where_it_opened() -> None:
    with pytest.raises(SuiteError) as info:
        read_suite(UNCLOSED, "suite.csv")
    error = info.value
    assert (error.source, error.row, error.column) == ("suite.csv", 2, "question")
    message = str(error)
    assert message.startswith("suite.csv, row 2, column 'question': ")
    assert "cell A2, line 2 of the file" in message and "never closed" in message
    assert 'double every quote inside a quoted cell ("")' in message


def test_unclosed_quote_after_multiline_cells_names_the_record_and_its_line() -> None:
    data = (
        b"id,question,expected_answer\r\n"
        b'1,"two\r\nlines",a\r\n'  # row 2 spans lines 2-3
        b'2,ok,"unclosed\r\n'  # row 3, line 4, column C
        b"3,never,read\r\n"
    )
    with pytest.raises(SuiteError) as info:
        read_suite(data, "s.csv")
    assert (info.value.row, info.value.column) == (3, "expected_answer")
    assert "cell C3, line 4 of the file" in str(info.value)


def test_a_stray_quote_that_swallows_rows_up_to_the_next_quote_is_refused() -> None:
    """The quote opened in row 2 closes at the quote of row 4: lenient csv glued rows 2-4
    into one cell and went on; the text after that closing quote gives it away."""
    data = b'id,question,expected_answer\n1,"What is 2+2?,4\n2,Second,5\n3,"Third",6\n'
    with pytest.raises(SuiteError) as info:
        read_suite(data, "s.csv")
    assert info.value.row == 2
    assert "text after its closing quote" in str(info.value)


def test_an_unclosed_quote_in_a_long_file_hits_the_field_limit_and_is_named_the_same() -> None:
    data = b'question,expected_answer\nok,1\nq2,"unclosed\n' + b"filler question,x\n" * 10_000
    with pytest.raises(SuiteError) as info:
        read_suite(data, "s.csv")
    assert (info.value.row, info.value.column) == (3, "expected_answer")
    assert "most likely its opening quote is never closed" in str(info.value)


def test_well_formed_quotes_still_read_every_case() -> None:
    data = b'question,expected_answer\n"He said ""hi""","a, b"\n"two\nlines",x\nplain,y\n'
    suite = read_suite(data, "s.csv")
    assert [c.question for c in suite.cases] == ['He said "hi"', "two\nlines", "plain"]
    assert [c.row for c in suite.cases] == [2, 3, 4]


# ------------------------------------------------------------------------------ encodings

CSV_TEXT = "question,expected_answer\nCafé — quel prix ?,5 €\nSecond,ok\n"
JSON_TEXT = '[{"question": "Café — quel prix ?", "expected_answer": "5 €"}]'


@pytest.mark.parametrize(
    "encoded",
    [
        CSV_TEXT.encode("utf-8"),
        codecs.BOM_UTF8 + CSV_TEXT.encode("utf-8"),
        CSV_TEXT.encode("utf-16"),  # BOM + little-endian: Excel's "Unicode Text"
        codecs.BOM_UTF16_BE + CSV_TEXT.encode("utf-16-be"),
        CSV_TEXT.encode("utf-32"),
    ],
    ids=["utf-8", "utf-8-bom", "utf-16-le-bom", "utf-16-be-bom", "utf-32-bom"],
)
def test_csv_with_a_byte_order_mark_is_decoded_as_it_says(encoded: bytes) -> None:
    suite = read_suite(encoded, "s.csv")
    assert [c.question for c in suite.cases] == ["Café — quel prix ?", "Second"]
    assert suite.cases[0].expected_answer == "5 €"


@pytest.mark.parametrize(
    "encoded", [JSON_TEXT.encode("utf-16"), codecs.BOM_UTF8 + JSON_TEXT.encode()]
)
def test_json_with_a_byte_order_mark_is_decoded_as_it_says(encoded: bytes) -> None:
    case = read_suite(encoded, "s.json").cases[0]
    assert (case.question, case.expected_answer) == ("Café — quel prix ?", "5 €")


@pytest.mark.parametrize(
    ("codec", "order", "name"),
    [
        ("utf-16-le", "little-endian", "s.csv"),
        ("utf-16-be", "big-endian", "s.csv"),
        ("utf-16-le", "little-endian", "s.json"),
    ],
)
def test_utf16_without_a_bom_is_refused_with_the_fix(codec: str, order: str, name: str) -> None:
    text = CSV_TEXT if name.endswith(".csv") else JSON_TEXT
    with pytest.raises(SuiteError) as info:
        read_suite(text.encode(codec), name)
    message = str(info.value)
    assert f"looks like {order} UTF-16 without a byte-order mark" in message
    assert "save it as UTF-8" in message


def test_bytes_that_are_not_utf8_are_refused_with_offset_line_and_column() -> None:
    data = CSV_TEXT.encode("cp1252", errors="replace")  # Excel's "CSV (Comma delimited)"
    with pytest.raises(SuiteError) as info:
        read_suite(data, "s.csv")
    message = str(info.value)
    assert "not valid UTF-8 text: byte 28 (line 2, column 4) cannot be decoded" in message
    assert "'CSV UTF-8 (Comma delimited)'" in message


def test_broken_utf16_names_the_byte_in_the_whole_file() -> None:
    data = "question\nab\n".encode("utf-16") + b"\x00\xdc" + "\n".encode("utf-16-le")
    with pytest.raises(SuiteError) as info:
        read_suite(data, "s.csv")
    assert "not valid UTF-16 text: byte 26 (line 3, column 1)" in str(info.value)


# --------------------------------------------------------------------------------- xlsx


def xlsx(rows: list[list[object]]) -> bytes:
    book = Workbook()
    sheet = book.active
    assert sheet is not None
    sheet.title = "Suite"
    for row in rows:
        sheet.append(row)
    buffer = io.BytesIO()
    book.save(buffer)
    return buffer.getvalue()


def test_a_formula_without_a_saved_value_is_refused_with_its_cell() -> None:
    """openpyxl (like pandas) writes the formula and no value; data_only reading saw an empty
    cell, so this case's expected answer vanished without a word."""
    data = xlsx([["question", "expected_answer"], ["q1", "a1"], ["q2", '=CONCAT("a","2")']])
    with pytest.raises(SuiteError) as info:
        read_suite(data, "suite.xlsx")
    error = info.value
    assert (error.sheet, error.row, error.column) == ("Suite", 3, "expected_answer")
    message = str(error)
    assert 'cell B3 holds a formula (=CONCAT("a","2")) with no saved value' in message
    assert "Open the file in Excel or LibreOffice and save it" in message
    assert "Paste Values" in message


def with_sheet_xml(data: bytes, edit: dict[bytes, bytes]) -> bytes:
    """The workbook with its first sheet's XML edited, as a spreadsheet app would save it."""
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as src, zipfile.ZipFile(out, "w") as dst:
        for item in src.infolist():
            content = src.read(item.filename)
            if item.filename == "xl/worksheets/sheet1.xml":
                # openpyxl writes an empty value as <v /> (stdlib writer) or <v></v> (lxml)
                content = content.replace(b"<v></v>", b"<v />")
                for old, new in edit.items():
                    assert old in content
                    content = content.replace(old, new)
            dst.writestr(item, content)
    return out.getvalue()


def test_formulas_with_saved_values_are_read_including_an_empty_text_result() -> None:
    data = xlsx([["question", "expected_answer", "notes"], ["=A9", "=B9", "=C9"]])
    # What Excel saves: the formula and its value; a formula that gave "" is a string cell.
    saved = with_sheet_xml(
        data,
        {
            b'<c r="A2"><f>A9</f><v /></c>': b'<c r="A2" t="str"><f>A9</f><v>Q from A9</v></c>',
            b'<c r="B2"><f>B9</f><v /></c>': b'<c r="B2"><f>B9</f><v>42</v></c>',
            b'<c r="C2"><f>C9</f><v /></c>': b'<c r="C2" t="str"><f>C9</f><v></v></c>',
        },
    )
    case = read_suite(saved, "suite.xlsx").cases[0]
    assert (case.question, case.expected_answer) == ("Q from A9", "42")
    assert case.metadata == {"notes": None}


def ole_file(*stream_names: str) -> bytes:
    """The start of an OLE compound file: its magic, and directory entries (UTF-16LE names)
    where the format keeps them. Not a full container; the check looks at no more."""
    header = bytes.fromhex("D0CF11E0A1B11AE1") + bytes(504)
    entries = b"".join(n.encode("utf-16-le").ljust(128, b"\x00") for n in stream_names)
    return header + entries


def test_password_protected_workbook_is_named_as_such() -> None:
    data = ole_file("Root Entry", "EncryptionInfo", "EncryptedPackage")
    with pytest.raises(SuiteError) as info:
        read_suite(data, "suite.xlsx")
    message = str(info.value)
    assert message.startswith("suite.xlsx: the workbook is password-protected (encrypted)")
    assert "remove the password" in message


def test_a_legacy_xls_renamed_xlsx_is_named_as_such() -> None:
    with pytest.raises(SuiteError) as info:
        read_suite(ole_file("Root Entry", "Workbook"), "suite.xlsx")
    assert "Excel 97-2003 workbook (.xls)" in str(info.value)
    assert "save it as 'Excel Workbook (.xlsx)'" in str(info.value)
