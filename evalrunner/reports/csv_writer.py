"""CSV rendering. Answers come from a model and are untrusted: a cell that a spreadsheet would
read as a formula is neutralised with a leading apostrophe (OWASP's CSV-injection advice)."""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence

_FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def neutralise(cell: str) -> str:
    if cell.startswith(_FORMULA_STARTS) and not _is_number(cell):
        return "'" + cell
    return cell


def _is_number(cell: str) -> bool:
    try:
        float(cell)
    except ValueError:
        return False
    return True


def to_csv(header: Sequence[str], rows: Sequence[Sequence[str]]) -> bytes:
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow([neutralise(h) for h in header])
    writer.writerows([[neutralise(c) for c in row] for row in rows])
    # utf-8-sig: Excel opens the file with the right encoding on a double click.
    # A lone surrogate (JSON can carry one from a model) must not cost the whole report.
    return buf.getvalue().encode("utf-8-sig", errors="replace")
