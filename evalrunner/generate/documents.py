"""Read the documents a suite is generated from, keeping their structure (headings).

Parsers are maintained libraries, imported only for the formats present: Markdown with
markdown-it-py, HTML with Beautiful Soup, PDF with pypdf, Word with mammoth; plain text
is split into paragraphs. A missing parser is an error that says which extra to install; an
unreadable file is an error that names it. Documents come from a local folder or an
``s3://bucket/prefix/``.
"""

from __future__ import annotations

import io
import re
from collections.abc import Iterator
from itertools import pairwise
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from evalrunner.errors import ConfigError
from evalrunner.sanitize import DEFAULT_MAX_TEXT_CHARS

SUFFIXES = (".txt", ".md", ".markdown", ".html", ".htm", ".pdf", ".docx")
INSTALL_DOCS = "pip install 'evalrunner[docs]'"
#: Largest document read (bytes): a corpus is documents, not data dumps.
MAX_BYTES = 20 * 1024 * 1024
MAX_DOCUMENTS = 2000


class Section(BaseModel):
    """A run of text under one heading path ("Annual leave > Carry-over")."""

    heading: str = ""
    text: str


class Document(BaseModel):
    name: str  # relative path or S3 key: what expected_documents will name
    sections: list[Section] = Field(default_factory=list)


def _need(module: str) -> Any:
    try:
        return __import__(module)
    except ImportError as exc:
        raise ConfigError(f"reading these documents needs {module}: {INSTALL_DOCS}") from exc


def _clean(text: str) -> str:
    text = text.replace("\x00", "")
    return re.sub(r"[ \t]+", " ", re.sub(r"\n{3,}", "\n\n", text)).strip()


def _paragraph_sections(text: str, heading: str = "") -> list[Section]:
    return [Section(heading=heading, text=_clean(text))] if _clean(text) else []


def _markdown(text: str) -> list[Section]:
    """Split at headings, with the path of headings above each section."""
    from markdown_it import MarkdownIt

    lines = text.splitlines()
    tokens = MarkdownIt("commonmark").parse(text)
    heads: list[tuple[int, int, str]] = []  # (first line, level, title)
    for i, token in enumerate(tokens):
        if token.type == "heading_open" and token.map:
            heads.append((token.map[0], int(token.tag[1]), tokens[i + 1].content))
    sections: list[Section] = []
    path: list[tuple[int, str]] = []
    starts = [*heads, (len(lines), 0, "")]
    if heads and heads[0][0] > 0:
        sections += _paragraph_sections("\n".join(lines[: heads[0][0]]))
    elif not heads:
        return _paragraph_sections(text)
    for (line, level, title), (nxt, _, _) in pairwise(starts):
        path = [(lv, t) for lv, t in path if lv < level] + [(level, title)]
        body = "\n".join(lines[line + 1 : nxt])
        sections += _paragraph_sections(body, " > ".join(t for _, t in path))
    return sections


def _html(data: bytes) -> list[Section]:
    bs4 = _need("bs4")
    soup = bs4.BeautifulSoup(data, "html.parser")
    for tag in soup(["script", "style", "nav", "header", "footer"]):
        tag.decompose()
    sections: list[Section] = []
    heading, parts = "", list[str]()
    for element in soup.find_all(["h1", "h2", "h3", "h4", "h5", "h6", "p", "li", "td", "pre"]):
        if element.name.startswith("h"):
            sections += _paragraph_sections("\n".join(parts), heading)
            heading, parts = element.get_text(" ", strip=True), []
        else:
            parts.append(element.get_text(" ", strip=True))
    sections += _paragraph_sections("\n".join(parts), heading)
    return sections or _paragraph_sections(soup.get_text("\n"))


def _pdf(data: bytes) -> list[Section]:
    pypdf = _need("pypdf")
    reader = pypdf.PdfReader(io.BytesIO(data))
    return [
        s
        for n, page in enumerate(reader.pages, start=1)
        for s in _paragraph_sections(page.extract_text() or "", f"page {n}")
    ]


def _docx(data: bytes) -> list[Section]:
    """Word through mammoth (docx to HTML, headings by style), then the HTML path. Not
    python-docx: it needs lxml, whose presence changes how openpyxl reads suite workbooks
    (a carriage return in a cell survives instead of becoming a line feed)."""
    mammoth = _need("mammoth")
    html = mammoth.convert_to_html(io.BytesIO(data)).value
    return _html(str(html).encode("utf-8"))


def parse(name: str, data: bytes) -> Document:
    """One document from its bytes, by its name's suffix."""
    suffix = Path(name).suffix.lower()
    try:
        if suffix in (".md", ".markdown"):
            sections = _markdown(data.decode("utf-8", errors="replace"))
        elif suffix in (".html", ".htm"):
            sections = _html(data)
        elif suffix == ".pdf":
            sections = _pdf(data)
        elif suffix == ".docx":
            sections = _docx(data)
        else:
            sections = _paragraph_sections(data.decode("utf-8", errors="replace"))
    except ConfigError:
        raise
    except Exception as exc:  # a parser's own errors: name the file, keep going is not safe
        raise ConfigError(
            f"{name}: could not be read as {suffix} ({type(exc).__name__}: {exc})"
        ) from exc
    for section in sections:
        section.text = section.text[:DEFAULT_MAX_TEXT_CHARS]
    return Document(name=name, sections=sections)


def _local(folder: Path) -> Iterator[tuple[str, bytes]]:
    if not folder.is_dir():
        raise ConfigError(
            f"{folder}: not a folder; give a folder of documents or s3://bucket/prefix/"
        )
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        if path.suffix.lower() in SUFFIXES:
            if path.stat().st_size > MAX_BYTES:
                raise ConfigError(f"{path}: larger than {MAX_BYTES // 2**20} MiB; split it")
            yield path.relative_to(folder).as_posix(), path.read_bytes()


def _s3(url: str) -> Iterator[tuple[str, bytes]]:
    import boto3

    bucket, _, prefix = url.removeprefix("s3://").partition("/")
    if not bucket:
        raise ConfigError(f"{url}: expected s3://bucket/prefix/")
    client = boto3.client("s3")
    pages = client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix)
    for page in pages:
        for item in page.get("Contents", []):
            key = item["Key"]
            if Path(key).suffix.lower() in SUFFIXES:
                if int(item.get("Size", 0)) > MAX_BYTES:
                    raise ConfigError(f"s3://{bucket}/{key}: larger than {MAX_BYTES // 2**20} MiB")
                yield key, client.get_object(Bucket=bucket, Key=key)["Body"].read()


def load_documents(source: str) -> list[Document]:
    """Every supported document under ``source`` (a folder or ``s3://bucket/prefix/``), in
    name order; documents without text are left out."""
    found = _s3(source) if source.startswith("s3://") else _local(Path(source))
    documents: list[Document] = []
    for name, data in found:
        if len(documents) >= MAX_DOCUMENTS:
            raise ConfigError(
                f"{source}: more than {MAX_DOCUMENTS} documents; use a narrower prefix"
            )
        document = parse(name, data)
        if document.sections:
            documents.append(document)
    if not documents:
        raise ConfigError(
            f"{source}: no document with text ({', '.join(SUFFIXES)}); check the path or prefix"
        )
    return documents
