"""Limits on what an input file *unpacks to*, checked before a parser is given the file.

A file's size on disk says little about the memory and time it costs: an xlsx or docx is a
zip, and 1 MB of zip can hold 3 million spreadsheet rows or a gigabyte of XML; a JSON file
nested 100,000 deep is a few hundred kilobytes. Every limit here is therefore checked on
what the file becomes, as cheaply as possible and before openpyxl, mammoth or ``json`` does
the expensive part:

- **zip containers** (xlsx suites, docx documents): the sizes the zip's central directory
  declares for its parts, summed. That is sound for Python's :mod:`zipfile`, which every
  parser here reads through: it never yields more than a part's declared ``file_size``, and
  a part whose data inflates past it fails its CRC check instead (so lying in the directory
  gets a damaged-file error, not a bomb).
- **rows** of a suite, counted in the sheet's XML before openpyxl builds cells for them, and
  the sheet's extent after (a single cell at ``XFD1048576`` makes a sheet of 17 billion
  cells for any reader that walks it).
- **JSON nesting**, which the :mod:`json` module does not limit at all: it recurses until
  Python's recursion limit and raises ``RecursionError`` (a traceback, not an error a user
  can act on), and structures just below that limit break the code that walks them later.

The limits are read from the operator's environment (trusted, unlike a suite or an event, so
a hostile upload cannot raise them); each refusal names the file, the limit and the
variable that raises it.
"""

from __future__ import annotations

import io
import os
import re
import zipfile
from collections.abc import Iterable, Mapping
from typing import Final

from pydantic import BaseModel, ConfigDict

from evalrunner.errors import ConfigError

#: Rows of one suite (sheet rows, CSV records, JSON cases).
SUITE_ROWS_ENV: Final = "EVALRUNNER_MAX_SUITE_ROWS"
DEFAULT_SUITE_ROWS: Final = 50_000
#: What one suite file unpacks to, in MiB: an xlsx's zip parts summed, a CSV's or JSON's bytes.
SUITE_MB_ENV: Final = "EVALRUNNER_MAX_SUITE_MB"
DEFAULT_SUITE_MB: Final = 32
#: What one document given to ``generate`` unpacks to, in MiB (a docx's parts summed, the
#: bytes of any other file, the text extracted from a PDF).
DOCUMENT_MB_ENV: Final = "EVALRUNNER_MAX_DOCUMENT_MB"
DEFAULT_DOCUMENT_MB: Final = 20
#: Cells of one suite (sheet cells, counting the empty ones a sheet's extent pads rows to;
#: CSV fields; JSON keys). Reading costs about half a kilobyte per cell (openpyxl's cell, the
#: row's value and its cell address, the case), so this is what bounds memory for a table
#: of small cells, which the size limit alone does not.
SUITE_CELLS_ENV: Final = "EVALRUNNER_MAX_SUITE_CELLS"
DEFAULT_SUITE_CELLS: Final = 600_000
#: Nesting of a JSON suite or cell. Fixed: the deepest suite shape (an H2O test lab) is
#: about six levels deep; well below Python's recursion limit, so everything that later walks
#: the parsed value (cleaning, reports) has room to do it.
MAX_JSON_DEPTH: Final = 64

_MIB: Final = 1024 * 1024
#: Bytes of a zip part inflated at a time while its rows are counted.
_CHUNK: Final = 1024 * 1024

#: A row or a cell element of a worksheet's XML, with or without a namespace prefix.
_ROW_ELEMENT: Final = re.compile(rb"<(?:[A-Za-z_][\w.-]*:)?row[\s/>]")
_CELL_ELEMENT: Final = re.compile(rb"<(?:[A-Za-z_][\w.-]*:)?c[\s/>]")
#: A shared string (each is some cell's text, so they count against the cells limit too:
#: openpyxl makes a string object of each, a few million of them from a few MB of XML).
_STRING_ELEMENT: Final = re.compile(rb"<(?:[A-Za-z_][\w.-]*:)?si[\s/>]")
#: A JSON string, escapes included (the unrolled form: one fast run between escapes).
_JSON_STRING: Final = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"')


def limit_from_env(name: str, default: int, environ: Mapping[str, str] | None = None) -> int:
    """The positive whole number set in the environment variable ``name`` (of ``environ``,
    default: this process's environment), else ``default``."""
    raw = (os.environ if environ is None else environ).get(name)
    if raw is None or not raw.strip():
        return default
    try:
        value = int(raw.strip().replace("_", ""))
    except ValueError:
        value = 0
    if value < 1:
        raise ConfigError(
            f"{name}={raw!r} is not a whole number above 0; unset it for the default of {default:,}"
        )
    return value


class SuiteLimits(BaseModel):
    """What one suite may unpack to, read once from the operator's environment
    (:meth:`from_env`): a deployed Prepare step has them in its runtime's settings
    (:class:`~evalrunner.pipeline.context.Settings`), read when its container starts; the
    CLI and the upload trigger read them where they read the suite."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    #: Rows (:data:`SUITE_ROWS_ENV`).
    rows: int = DEFAULT_SUITE_ROWS
    #: Cells (:data:`SUITE_CELLS_ENV`).
    cells: int = DEFAULT_SUITE_CELLS
    #: What the file unpacks to, in MiB (:data:`SUITE_MB_ENV`).
    megabytes: int = DEFAULT_SUITE_MB

    @property
    def bytes(self) -> int:
        return self.megabytes * _MIB

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> SuiteLimits:
        """The limits ``environ`` (default: this process's environment) sets; a bad value is
        a ConfigError naming its variable."""
        return cls(
            rows=limit_from_env(SUITE_ROWS_ENV, DEFAULT_SUITE_ROWS, environ),
            cells=limit_from_env(SUITE_CELLS_ENV, DEFAULT_SUITE_CELLS, environ),
            megabytes=limit_from_env(SUITE_MB_ENV, DEFAULT_SUITE_MB, environ),
        )


def document_bytes() -> int:
    return limit_from_env(DOCUMENT_MB_ENV, DEFAULT_DOCUMENT_MB) * _MIB


def megabytes(size: int) -> str:
    """``size`` in MiB for a message: ``1,024.0 MB``."""
    return f"{size / _MIB:,.1f} MB"


def over_size(what: str, size: int, limit: int, setting: str, *, packed: int | None = None) -> str:
    """The message for ``what`` (``the workbook unpacks to``) ``size`` bytes over ``limit``."""
    ratio = f" ({size / packed:,.0f}× its {megabytes(packed)} on disk)" if packed else ""
    return (
        f"{what} {megabytes(size)}{ratio}, over the limit of {megabytes(limit)}; it was not "
        f"read. Raise {setting} (in MB) to read a larger file"
    )


def zip_unpacked_size(data: bytes) -> tuple[int, int] | None:
    """(bytes the zip's parts unpack to, bytes they take packed), from its central directory;
    ``None`` when ``data`` is not a readable zip (the parser then says what is wrong)."""
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            parts = archive.infolist()
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, ValueError, EOFError):
        return None
    return sum(p.file_size for p in parts), sum(p.compress_size for p in parts)


def xml_part_over(data: bytes, rows: int, cells: int) -> tuple[str, str, int] | None:
    """(part name, ``"rows"``, ``"cells"`` or ``"shared strings"``, elements counted) for the
    first XML part of the zip ``data`` with more than ``rows`` row elements or ``cells`` cell
    or shared-string elements, counting stopped just past the limit; ``None`` when no part
    has.

    Only call after :func:`zip_unpacked_size` was checked: this inflates the XML parts
    (bounded by that check) in chunks, at a few hundred MB/s, which is far cheaper than
    openpyxl building an object for each cell. Every part is looked at, not only
    ``xl/worksheets/``, since a workbook's relationships may put a sheet anywhere."""
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            for info in archive.infolist():
                if info.filename.lower().endswith(".xml"):
                    over = _part_over(archive, info, rows, cells)
                    if over is not None:
                        return (info.filename, *over)
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, ValueError, EOFError):
        return None  # a damaged part: openpyxl reports it
    return None


def _part_over(
    archive: zipfile.ZipFile, info: zipfile.ZipInfo, rows: int, cells: int
) -> tuple[str, int] | None:
    counts = {"rows": 0, "cells": 0, "shared strings": 0}
    limits = {"rows": rows, "cells": cells, "shared strings": cells}
    patterns = {"rows": _ROW_ELEMENT, "cells": _CELL_ELEMENT, "shared strings": _STRING_ELEMENT}
    carry = b""
    with archive.open(info) as stream:
        while True:
            chunk = stream.read(_CHUNK)
            buffer = carry + chunk
            # Count up to the last "<": an element cut by the chunk's end is counted with
            # the next chunk (at the end, everything is counted).
            cut = buffer.rfind(b"<") if chunk else -1
            cut = len(buffer) if cut < 0 or len(buffer) - cut > 256 else cut
            for name, pattern in patterns.items():
                counts[name] += len(pattern.findall(buffer, 0, cut))
                if counts[name] > limits[name]:
                    return name, counts[name]
            carry = buffer[cut:]
            if not chunk:
                return None


def json_keys(text: str) -> int:
    """How many object keys the JSON ``text`` holds (exactly, for valid JSON), counted without
    parsing it: outside strings, a colon only ever follows a key. Parsing an object of
    millions of keys costs seconds and hundreds of MB before the count could be taken."""
    return _JSON_STRING.sub("", text).count(":")


def json_too_deep(value: object, limit: int = MAX_JSON_DEPTH) -> bool:
    """Whether the parsed JSON ``value`` nests lists and objects more than ``limit`` deep.

    Walked with a stack, not recursion, so that a deep value is measured rather than
    crashing the measurement; only containers are pushed."""
    if not isinstance(value, list | dict):
        return False
    stack: list[tuple[list[object] | dict[str, object], int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > limit:
            return True
        children: Iterable[object] = item.values() if isinstance(item, dict) else item
        stack.extend((c, depth + 1) for c in children if isinstance(c, list | dict))
    return False
