"""Reading documents with their structure, and chunks that never cross a heading."""

from __future__ import annotations

import io

import boto3
import pytest

from evalrunner.errors import ConfigError
from evalrunner.generate.chunks import chunk_documents
from evalrunner.generate.documents import load_documents, parse

MD = b"""# Leave

Intro line that is long enough to be a section of its own, with more than twelve words.

## Carry-over

You may carry over up to 5 unused days into the next year. Carried-over days expire on 31 March.

## Booking

Book leave in the HR portal. Your manager approves requests within five working days of them.
"""


def _pdf(text: str) -> bytes:
    """A one-page PDF showing ``text`` (Helvetica), with a correct cross-reference table."""
    stream = f"BT /F1 12 Tf 72 720 Td ({text}) Tj ET".encode()
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
        b"/Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length " + str(len(stream)).encode() + b" >>\nstream\n" + stream + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    out = io.BytesIO()
    out.write(b"%PDF-1.4\n")
    offsets = []
    for n, body in enumerate(objects, start=1):
        offsets.append(out.tell())
        out.write(f"{n} 0 obj\n".encode() + body + b"\nendobj\n")
    xref = out.tell()
    out.write(f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode())
    for offset in offsets:
        out.write(f"{offset:010d} 00000 n \n".encode())
    out.write(
        f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n".encode()
    )
    return out.getvalue()


def _docx() -> bytes:
    """A minimal Word document: two headings (styles "heading 1" and "heading 2") and text."""
    import zipfile

    w = 'xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"'

    def para(text: str, style: str | None = None) -> str:
        props = f'<w:pPr><w:pStyle w:val="{style}"/></w:pPr>' if style else ""
        return f"<w:p>{props}<w:r><w:t>{text}</w:t></w:r></w:p>"

    body = "".join(
        [
            para("Expenses", "Heading1"),
            para("Receipts are needed for every expense above 25 euros, without exception."),
            para("Travel", "Heading2"),
            para("Book travel through the travel portal at least two weeks in advance."),
        ]
    )
    styles = "".join(
        f'<w:style w:type="paragraph" w:styleId="Heading{n}">'
        f'<w:name w:val="heading {n}"/></w:style>'
        for n in (1, 2)
    )
    rel = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
    files = {
        "[Content_Types].xml": (
            '<?xml version="1.0"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/'
            'content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats'
            '-package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/>'
            '<Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-'
            'officedocument.wordprocessingml.document.main+xml"/></Types>'
        ),
        "_rels/.rels": (
            '<?xml version="1.0"?><Relationships xmlns="http://schemas.openxmlformats.org/package/'
            f'2006/relationships"><Relationship Id="rId1" Type="{rel}/officeDocument" '
            'Target="word/document.xml"/></Relationships>'
        ),
        "word/_rels/document.xml.rels": (
            '<?xml version="1.0"?><Relationships xmlns="http://schemas.openxmlformats.org/package/'
            f'2006/relationships"><Relationship Id="rId1" Type="{rel}/styles" '
            'Target="styles.xml"/></Relationships>'
        ),
        "word/document.xml": (
            f'<?xml version="1.0"?><w:document {w}><w:body>{body}</w:body></w:document>'
        ),
        "word/styles.xml": f'<?xml version="1.0"?><w:styles {w}>{styles}</w:styles>',
    }
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, text in files.items():
            archive.writestr(name, text)
    return buffer.getvalue()


def test_markdown_sections_carry_their_heading_path():
    doc = parse("leave.md", MD)
    headings = [s.heading for s in doc.sections]
    assert headings == ["Leave", "Leave > Carry-over", "Leave > Booking"]
    assert doc.sections[1].text.startswith("You may carry over up to 5 unused days")


def test_html_headings_split_and_scripts_are_dropped():
    html = (
        b"<html><script>alert('x')</script><h1>Remote</h1><p>Work from home two days.</p>"
        b"<h2>Equipment</h2><ul><li>A laptop</li><li>A chair stipend of 300 euros</li></ul>"
    )
    doc = parse("remote.html", html)
    assert [s.heading for s in doc.sections] == ["Remote", "Equipment"]
    assert "alert" not in " ".join(s.text for s in doc.sections)
    assert "chair stipend of 300 euros" in doc.sections[1].text


def test_pdf_and_docx_are_read_by_their_parsers():
    pdf = parse("policy.pdf", _pdf("Employees receive 25 days of paid annual leave."))
    assert pdf.sections[0].heading == "page 1"
    assert "25 days of paid annual leave" in pdf.sections[0].text
    docx = parse("expenses.docx", _docx())
    assert [s.heading for s in docx.sections] == ["Expenses", "Travel"]
    assert "above 25 euros" in docx.sections[0].text


def test_an_unreadable_file_names_itself():
    with pytest.raises(ConfigError, match=r"broken\.pdf: could not be read as \.pdf"):
        parse("broken.pdf", b"%PDF-1.4 this is not a pdf")


def test_chunks_never_cross_a_heading_and_respect_the_size(tmp_path):
    long = " ".join(f"Sentence number {i} of the long rule says something." for i in range(40))
    (tmp_path / "a.md").write_bytes(MD + f"\n## Long\n\n{long}\n".encode())
    (tmp_path / "notes.txt").write_text(
        "Plain text policy: the office opens at 8 and closes at 18 on weekdays."
    )
    (tmp_path / "image.png").write_bytes(b"\x89PNG")
    docs = load_documents(str(tmp_path))
    assert [d.name for d in docs] == ["a.md", "notes.txt"]
    chunks = chunk_documents(docs, max_words=60)
    assert all(c.words <= 60 for c in chunks)
    assert {c.heading for c in chunks if "Sentence number" in c.text} == {"Leave > Long"}
    assert len([c for c in chunks if c.heading == "Leave > Long"]) >= 5
    assert all(c.text.rstrip().endswith(".") for c in chunks if c.heading == "Leave > Long")


def test_documents_from_an_s3_prefix(monkeypatch):
    from moto import mock_aws

    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    with mock_aws():
        s3 = boto3.client("s3")
        s3.create_bucket(Bucket="corpus")
        s3.put_object(Bucket="corpus", Key="hr/leave.md", Body=MD)
        s3.put_object(Bucket="corpus", Key="other/skip.md", Body=MD)
        docs = load_documents("s3://corpus/hr/")
    assert [d.name for d in docs] == ["hr/leave.md"]


def test_an_empty_folder_is_a_clear_error(tmp_path):
    with pytest.raises(ConfigError, match="no document with text"):
        load_documents(str(tmp_path))
    with pytest.raises(ConfigError, match="not a folder"):
        load_documents(str(tmp_path / "missing"))
