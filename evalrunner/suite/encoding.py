"""Turn the bytes of a text suite (CSV or JSON) into text, or say why not and how to fix it.

Suites come from many hands and many editors. UTF-8 is the format's encoding; a byte-order
mark says the rest (Excel's "CSV UTF-8" writes a UTF-8 BOM, Excel's "Unicode Text" and
Windows PowerShell's ``Out-File`` write UTF-16 with a BOM), so a file with a BOM is decoded
as its BOM says. Without one, UTF-16 is recognised by its NUL bytes between ASCII letters:
guessing its byte order would be a heuristic, so such a file is refused with the fix. Bytes
that are not UTF-8 (an Excel "CSV (Comma delimited)" in the Windows code page) are refused
with where they are, never replaced silently: a mangled expected answer would score wrong.
"""

from __future__ import annotations

import codecs
from typing import Final

from evalrunner.errors import SuiteError

#: Byte-order marks, longest first: UTF-32 LE starts with the UTF-16 LE mark.
_BOMS: Final[tuple[tuple[bytes, str, str], ...]] = (
    (codecs.BOM_UTF32_LE, "utf-32", "UTF-32"),
    (codecs.BOM_UTF32_BE, "utf-32", "UTF-32"),
    (codecs.BOM_UTF8, "utf-8-sig", "UTF-8"),
    (codecs.BOM_UTF16_LE, "utf-16", "UTF-16"),
    (codecs.BOM_UTF16_BE, "utf-16", "UTF-16"),
)

#: How much of the start of a file is looked at for the NUL pattern of BOM-less UTF-16.
_SNIFF_BYTES: Final = 4096

#: Share of NUL bytes at even (or odd) offsets above which a file is BOM-less UTF-16.
_NUL_SHARE: Final = 0.3

#: How to save a file as UTF-8, per format: the fix every refusal ends with.
SAVE_AS_UTF8: Final[dict[str, str]] = {
    "csv": "save it as UTF-8: in Excel, File > Save As > 'CSV UTF-8 (Comma delimited)'; in "
    "other editors choose the encoding UTF-8",
    "json": "save it as UTF-8 (the encoding JSON requires): in your editor choose the "
    "encoding UTF-8",
}


def _utf16_without_bom(data: bytes) -> str | None:
    """'little-endian' / 'big-endian' when the start of ``data`` is UTF-16 without a BOM
    (ASCII text with a NUL after, or before, every letter), else None."""
    sample = data[:_SNIFF_BYTES]
    if len(sample) < 4 or b"\x00" not in sample:
        return None
    even, odd = sample[0::2], sample[1::2]
    if odd.count(0) >= _NUL_SHARE * len(odd) and even.count(0) < _NUL_SHARE * len(even):
        return "little-endian"
    if even.count(0) >= _NUL_SHARE * len(even) and odd.count(0) < _NUL_SHARE * len(odd):
        return "big-endian"
    return None


def _position(data: bytes, offset: int, codec: str) -> str:
    """``byte N (line L, column C)``: N counts bytes from 0 like a hex editor, L and C count
    lines and characters from 1 like a text editor."""
    before = data[:offset].decode(codec, errors="replace")
    line = before.count("\n") + 1
    column = len(before) - (before.rfind("\n") + 1) + 1
    return f"byte {offset} (line {line}, column {column})"


def decode_text(data: bytes, *, source: str, kind: str) -> str:
    """The text of a suite file of format ``kind`` ("csv" or "json").

    Decoded as its byte-order mark says (UTF-8, UTF-16, UTF-32), else as UTF-8. Raises
    :class:`SuiteError` naming the cause and the fix for BOM-less UTF-16 and for bytes the
    encoding cannot decode (with the byte offset, line and column of the first one)."""
    fix = SAVE_AS_UTF8[kind]
    codec, name = next(((c, n) for bom, c, n in _BOMS if data.startswith(bom)), ("utf-8", "UTF-8"))
    order = _utf16_without_bom(data) if codec == "utf-8" else None
    if order is not None:
        raise SuiteError(
            f"the file looks like {order} UTF-16 without a byte-order mark (NUL bytes "
            f"between the letters); {fix}",
            source=source,
        )
    try:
        return data.decode(codec)
    except UnicodeDecodeError as exc:
        # utf-8-sig reports offsets after the BOM it stripped, utf-16 and utf-32 from the
        # start of the file: what was cut off is what ``exc.object`` lacks.
        where = _position(data, exc.start + len(data) - len(exc.object), codec)
        raise SuiteError(
            f"the file is not valid {name} text: {where} cannot be decoded ({exc.reason}); {fix}",
            source=source,
        ) from None
