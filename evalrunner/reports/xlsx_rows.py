"""The body rows of details.xlsx's sheets, serialised here and spliced into openpyxl's package.

Why by hand: without lxml (which this project cannot install: it changes how openpyxl reads
suites), openpyxl serialises every cell through et_xmlfile's pure-Python element writer,
after building a Cell, hashing its style and raising and catching a ValueError for it in
write-only mode; at 2,000 cases that was most of Aggregate's CPU (three quarters of the
workbook's). XlsxWriter is faster but writes other XML (column widths padded, control
characters escaped as ``_x000D_``), so a reader would see a different workbook. The cells
here are the few shapes the reports produce (inline string, number, boolean, empty), written
byte for byte as openpyxl 3.1's write-only writer writes them (``etree_write_cell``: the
same attributes in the same order, ``"%.16g"`` numbers, NaN as an empty ``<v />``,
``xml:space="preserve"`` on text with surrounding whitespace, ElementTree's escaping);
``tests/unit/reports/test_xlsx_rows.py`` pins that against openpyxl writing the same rows.

openpyxl still writes everything else: the package, the styles (each distinct cell style is
registered with the workbook in the order of first use, as openpyxl would), the sheet's head
(widths, frozen panes, header row) and tail (autofilter, conditional formats). The rows go to
a temporary file as they are made, so memory does not grow with the run; :func:`splice` then
streams them into the sheet's part of the saved package.
"""

from __future__ import annotations

import io
import math
import shutil
import tempfile
import zipfile
from collections.abc import Callable, Mapping, Sequence
from typing import IO

from openpyxl.cell import WriteOnlyCell
from openpyxl.styles import Alignment
from openpyxl.utils import get_column_letter
from openpyxl.worksheet._write_only import WriteOnlyWorksheet

#: zipfile's limit above which a member needs the ZIP64 extension (its ``ZIP64_LIMIT``).
_ZIP64_LIMIT = (1 << 31) - 1
_END = b"</sheetData>"


def escape(text: str) -> str:
    """ElementTree's escaping of element text (``xml.etree.ElementTree._escape_cdata``)."""
    if "&" in text:
        text = text.replace("&", "&amp;")
    if "<" in text:
        text = text.replace("<", "&lt;")
    if ">" in text:
        text = text.replace(">", "&gt;")
    return text


def number_text(value: float | int) -> str:
    """openpyxl's ``safe_string`` of a number (NaN and infinities have no text)."""
    if not math.isfinite(value):
        return ""
    return f"{value:.16g}"


class RowWriter:
    """Serialises a sheet's body rows (row 2 on) into a temporary file.

    Each column has an alignment and, for a number column, a number format that its numbers
    take. A column's style is built and registered with the workbook on its first use, and
    only then, so the workbook's style lists (alignments, number formats, cell styles) come
    out in the same order, with the same ids, as when openpyxl styles each cell. Text goes
    through ``clean`` (the workbook's rule for what a cell may hold) on its way in."""

    def __init__(
        self,
        sheet: WriteOnlyWorksheet,
        alignments: Sequence[Alignment],
        number_formats: Sequence[str | None],
        clean: Callable[[str], str],
    ) -> None:
        self._sheet = sheet
        self._letters = [get_column_letter(c) for c in range(1, len(alignments) + 1)]
        self._alignments = list(alignments)
        self._number_formats = list(number_formats)
        self._clean = clean
        self._ids: dict[tuple[int, bool], str] = {}
        self._row = 1
        self.file: IO[bytes] = tempfile.TemporaryFile()

    def _style(self, column: int, numbered: bool) -> str:
        """`` s="N"`` for the column's style (with its number format when ``numbered``), or
        nothing for the default style, as openpyxl writes it."""
        key = (column, numbered)
        attribute = self._ids.get(key)
        if attribute is None:
            prototype = WriteOnlyCell(self._sheet)
            prototype.alignment = self._alignments[column]
            number_format = self._number_formats[column]
            if numbered and number_format is not None:
                prototype.number_format = number_format
            attribute = f' s="{prototype.style_id}"' if prototype.has_style else ""
            self._ids[key] = attribute
        return attribute

    def row(self, values: Sequence[str | float | int | bool | None]) -> None:
        """One row of cells as the reports make them: text is made safe with ``clean``, a
        value of a number column (a boolean too) is stored as a float in the column's number
        format, anything else as it is; None is an empty cell."""
        self._row += 1
        r = self._row
        ids, letters, formats, clean = self._ids, self._letters, self._number_formats, self._clean
        parts = [f'<row r="{r}">']
        append = parts.append
        for column, value in enumerate(values):
            # the type decides the cell's shape and whether it takes the number style
            numbered = False
            if value is None:
                body = ' t="n" />'
            elif isinstance(value, str):
                value = clean(value)
                if value:
                    stripped = value.strip()
                    space = ' xml:space="preserve"' if stripped and stripped != value else ""
                    body = f' t="inlineStr"><is><t{space}>{escape(value)}</t></is></c>'
                else:
                    body = ' t="inlineStr" />'
            elif formats[column] is not None:
                numbered = True
                text = number_text(float(value))
                body = f' t="n"><v>{text}</v></c>' if text else ' t="n"><v /></c>'
            elif isinstance(value, bool):
                body = f' t="b"><v>{int(value)}</v></c>'
            else:
                text = number_text(value)
                body = f' t="n"><v>{text}</v></c>' if text else ' t="n"><v /></c>'
            style = ids.get((column, numbered))
            if style is None:
                style = self._style(column, numbered)
            append(f'<c r="{letters[column]}{r}"{style}{body}')
        parts.append("</row>")
        self.file.write("".join(parts).encode("utf-8"))

    @property
    def count(self) -> int:
        """Body rows written."""
        return self._row - 1


def splice(package: bytes, bodies: Mapping[str, IO[bytes]]) -> bytes:
    """The saved package with each sheet's body rows (``bodies``: part name, e.g.
    ``xl/worksheets/sheet1.xml``, to its row file) put at the end of its ``<sheetData>``,
    after the header row openpyxl wrote. Every other part is copied as it is."""
    out = io.BytesIO()
    with (
        zipfile.ZipFile(io.BytesIO(package)) as source,
        zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as target,
    ):
        for info in source.infolist():
            data = source.read(info)
            body = bodies.get(info.filename)
            if body is None:
                target.writestr(info, data)
                continue
            head, end, tail = data.partition(_END)
            if not end:
                raise ValueError(f"{info.filename} has no <sheetData> to put the rows in")
            size = body.seek(0, io.SEEK_END)
            body.seek(0)
            big = size + len(data) > _ZIP64_LIMIT
            with target.open(info, "w", force_zip64=big) as stream:
                stream.write(head)
                shutil.copyfileobj(body, stream)
                stream.write(end + tail)
    return out.getvalue()
