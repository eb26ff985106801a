"""Small files that unpack to a lot: the hostile inputs of issue 27 item 3, built on demand.

Each builder streams its repetitive XML through deflate, so a file of a few hundred KB to a
megabyte declares (and really holds) tens or hundreds of MB of rows, strings or paragraphs.
Used by the tests (small sizes, against lowered limits) and by ``bench/bench_bombs.py`` (the
issue's sizes)."""

from __future__ import annotations

import io
import zipfile
from collections.abc import Iterable, Iterator
from pathlib import Path

from openpyxl import Workbook

_CHUNK_ROWS = 20_000
_W = 'xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"'
_REL = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"


def _template() -> dict[str, bytes]:
    """The parts of a one-case workbook openpyxl wrote, to swap a part of for a bomb."""
    workbook = Workbook()
    sheet = workbook.active
    sheet.append(["question", "expected_answer"])
    sheet.append(["How many days of leave?", "25 days."])
    buffer = io.BytesIO()
    workbook.save(buffer)
    with zipfile.ZipFile(buffer) as archive:
        return {name: archive.read(name) for name in archive.namelist()}


def _write(path: Path, parts: dict[str, bytes], big: str, chunks: Iterable[bytes]) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as archive:
        for name, data in parts.items():
            if name != big:
                archive.writestr(name, data)
        with archive.open(big, "w", force_zip64=True) as stream:
            for chunk in chunks:
                stream.write(chunk)
    return path


def xlsx_rows(path: Path, rows: int) -> Path:
    """A workbook whose sheet holds a header and ``rows`` one-cell question rows. The rows
    carry no row numbers (they are optional; each row is then the next), so they are all the
    same bytes and 3 million of them pack into about a megabyte."""
    sheet = "xl/worksheets/sheet1.xml"
    head, _, _ = _template()[sheet].partition(b"<sheetData>")
    row = b'<row><c t="inlineStr"><is><t>q</t></is></c></row>'

    def chunks() -> Iterator[bytes]:
        yield head + b"<sheetData>"
        yield b'<row r="1"><c r="A1" t="inlineStr"><is><t>question</t></is></c></row>'
        for start in range(0, rows, _CHUNK_ROWS):
            yield row * min(_CHUNK_ROWS, rows - start)
        yield b"</sheetData></worksheet>"

    return _write(path, _template(), sheet, chunks())


def xlsx_shared_strings(path: Path, megabytes: int, item: int = 1000) -> Path:
    """A one-case workbook with a shared-strings table of ``megabytes`` MB of strings of
    ``item`` characters each."""
    parts = _template()
    types = "application/vnd.openxmlformats-officedocument.spreadsheetml.sharedStrings+xml"
    parts["[Content_Types].xml"] = parts["[Content_Types].xml"].replace(
        b"</Types>",
        f'<Override PartName="/xl/sharedStrings.xml" ContentType="{types}"/></Types>'.encode(),
    )
    name = "xl/sharedStrings.xml"
    parts[name] = b""
    filler = b"<si><t>" + b"A" * item + b"</t></si>"
    main = b"http://schemas.openxmlformats.org/spreadsheetml/2006/main"

    def chunks() -> Iterator[bytes]:
        yield b'<?xml version="1.0"?><sst xmlns="' + main + b'">'
        for _ in range(megabytes * 1024 * 1024 // len(filler) + 1):
            yield filler
        yield b"</sst>"

    return _write(path, parts, name, chunks())


def xlsx_far_cell(path: Path, cell: str) -> Path:
    """A one-case workbook with one more cell at ``cell`` (``XFD1048576``): one row element,
    an extent of millions of cells."""
    workbook = Workbook()
    sheet = workbook.active
    sheet.append(["question", "expected_answer"])
    sheet.append(["How many days of leave?", "25 days."])
    sheet[cell] = "x"
    workbook.save(path)
    return path


def docx_bomb(path: Path, megabytes: int) -> Path:
    """A Word document whose body is ``megabytes`` MB of paragraphs."""
    paragraph = b"<w:p><w:r><w:t>" + b"Leave is 25 days a year. " * 40 + b"</w:t></w:r></w:p>"
    parts = {
        "[Content_Types].xml": (
            b'<?xml version="1.0"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/'
            b'content-types"><Default Extension="rels" ContentType="application/vnd.openxml'
            b'formats-package.relationships+xml"/><Default Extension="xml" ContentType='
            b'"application/xml"/><Override PartName="/word/document.xml" ContentType="'
            b"application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"
            b'"/></Types>'
        ),
        "_rels/.rels": (
            b'<?xml version="1.0"?><Relationships xmlns="http://schemas.openxmlformats.org/'
            b'package/2006/relationships"><Relationship Id="rId1" Type="'
            + _REL.encode()
            + b'/officeDocument" Target="word/document.xml"/></Relationships>'
        ),
        "word/document.xml": b"",
    }

    def chunks() -> Iterator[bytes]:
        yield f'<?xml version="1.0"?><w:document {_W}><w:body>'.encode()
        for _ in range(megabytes * 1024 * 1024 // len(paragraph) + 1):
            yield paragraph
        yield b"</w:body></w:document>"

    return _write(path, parts, "word/document.xml", chunks())


def deep_json(path: Path, depth: int) -> Path:
    """A JSON suite whose one case's question sits ``depth`` lists deep."""
    text = '[{"question": ' + "[" * depth + '"q"' + "]" * depth + "}]"
    path.write_text(text, encoding="utf-8")
    return path


def deep_cell_csv(path: Path, depth: int) -> Path:
    """A CSV suite whose expected_contexts cell is a JSON array ``depth`` deep."""
    cell = "[" * depth + "]" * depth
    path.write_text(f"question,expected_contexts\nWhat?,{cell}\n", encoding="utf-8")
    return path


__all__ = [
    "deep_cell_csv",
    "deep_json",
    "docx_bomb",
    "pdf_bomb",
    "xlsx_far_cell",
    "xlsx_rows",
    "xlsx_shared_strings",
]


def pdf_bomb(path: Path, megabytes: int) -> Path:
    """A one-page PDF whose Flate-compressed content stream shows ``megabytes`` MB of text."""
    import zlib

    line = b"BT /F1 12 Tf 72 720 Td (" + b"Leave is 25 days a year. " * 40 + b") Tj ET\n"
    stream = zlib.compress(line * (megabytes * 1024 * 1024 // 1000 + 1), 9)
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
        b"/Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length %d /Filter /FlateDecode >>\nstream\n" % len(stream) + stream + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    out = io.BytesIO()
    out.write(b"%PDF-1.4\n")
    offsets = []
    for n, body in enumerate(objects, start=1):
        offsets.append(out.tell())
        out.write(b"%d 0 obj\n" % n + body + b"\nendobj\n")
    xref = out.tell()
    out.write(b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1))
    for offset in offsets:
        out.write(b"%010d 00000 n \n" % offset)
    out.write(
        b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    )
    path.write_bytes(out.getvalue())
    return path
