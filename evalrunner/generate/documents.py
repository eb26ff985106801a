"""Read the documents a suite is generated from, keeping their structure (headings).

Parsers are maintained libraries, imported only for the formats present: Markdown with
markdown-it-py, HTML with Beautiful Soup, PDF with pypdf, Word with mammoth; plain text
is split into paragraphs. A missing parser is an error that says which extra to install; an
unreadable file is an error that names it. Documents come from a local folder or an
``s3://bucket/prefix/``.

Only what was given is read, and no more of it than the limit: a symbolic link that leads
out of the folder is refused (it could make a system file a "document" whose text goes to
the judge), and every document is held to ``EVALRUNNER_MAX_DOCUMENT_MB`` of what it unpacks
to (see :mod:`evalrunner.input_limits`) before its parser sees it: a docx by the sizes its
zip declares, a PDF by the text extracted so far, anything else by its bytes.
"""

from __future__ import annotations

import io
import os
import re
from collections.abc import Iterator
from itertools import pairwise
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from evalrunner import input_limits
from evalrunner.errors import ConfigError
from evalrunner.sanitize import DEFAULT_MAX_TEXT_CHARS

SUFFIXES = (".txt", ".md", ".markdown", ".html", ".htm", ".pdf", ".docx")
INSTALL_DOCS = "pip install 'evalrunner[docs]'"
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


def _pdf(name: str, data: bytes, limit: int) -> list[Section]:
    """Page by page, stopping once the text extracted passes ``limit`` characters (a PDF's
    streams are compressed: a small file can hold far more text than it weighs)."""
    pypdf = _need("pypdf")
    reader = pypdf.PdfReader(io.BytesIO(data))
    sections: list[Section] = []
    extracted = 0
    for n, page in enumerate(reader.pages, start=1):
        text = page.extract_text() or ""
        extracted += len(text)
        if extracted > limit:
            raise _too_big(name, f"the text extracted up to page {n} is over", limit)
        sections += _paragraph_sections(text, f"page {n}")
    return sections


def _too_big(
    name: str, what: str, limit: int, size: int | None = None, packed: int = 0
) -> ConfigError:
    if size is None:
        message = (
            f"{what} {input_limits.megabytes(limit)}, the limit; it was not read. Raise "
            f"{input_limits.DOCUMENT_MB_ENV} (in MB) to read a larger document, or split it"
        )
    else:
        message = input_limits.over_size(
            what, size, limit, input_limits.DOCUMENT_MB_ENV, packed=packed or None
        )
    return ConfigError(f"{name}: {message}")


def _check_size(name: str, data: bytes, limit: int) -> None:
    """Refuse a document over ``limit`` bytes, or a docx whose zip parts unpack to more."""
    if len(data) > limit:
        raise _too_big(name, "the document is", limit, len(data))
    if Path(name).suffix.lower() == ".docx":
        sizes = input_limits.zip_unpacked_size(data)
        if sizes is not None and sizes[0] > limit:
            raise _too_big(name, "the document unpacks to", limit, sizes[0], len(data))


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
    limit = input_limits.document_bytes()
    _check_size(name, data, limit)
    try:
        if suffix in (".md", ".markdown"):
            sections = _markdown(data.decode("utf-8", errors="replace"))
        elif suffix in (".html", ".htm"):
            sections = _html(data)
        elif suffix == ".pdf":
            sections = _pdf(name, data, limit)
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
    """The documents under ``folder``, links included only while they stay inside it."""
    if not folder.is_dir():
        raise ConfigError(
            f"{folder}: not a folder; give a folder of documents or s3://bucket/prefix/"
        )
    root = folder.resolve()
    limit = input_limits.document_bytes()
    found: list[Path] = []
    # Not rglob: it lists a link to a file outside as a file of the folder. os.walk does not
    # enter linked folders (their documents are read where they really are, if inside);
    # a linked document is read only when the link stays inside the folder.
    for top, _, files in os.walk(folder, followlinks=False):
        found += [Path(top, f) for f in files if Path(f).suffix.lower() in SUFFIXES]
    for path in sorted(found):
        if path.is_symlink() and not path.resolve().is_relative_to(root):
            raise ConfigError(
                f"{path}: a symbolic link that leads out of the documents folder; generate "
                f"reads only what is inside {folder} (copy the document in instead)"
            )
        if path.is_file():
            if path.stat().st_size > limit:
                raise _too_big(str(path), "the document is", limit, path.stat().st_size)
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
                size = int(item.get("Size", 0))
                if size > input_limits.document_bytes():
                    raise _too_big(
                        f"s3://{bucket}/{key}",
                        "the document is",
                        input_limits.document_bytes(),
                        size,
                    )
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
