"""CSV rendering. Answers come from a model and are untrusted, so two things hold for every
cell: a cell a spreadsheet would read as a formula is neutralised (:mod:`.formulas`, the rule
the xlsx writer uses too), and a cell holding a line break is quoted, so it stays one cell.

Records end with CRLF (RFC 4180, what Excel writes). Python's writer quotes a field for the
characters of its own line terminator only: with the former ``"\\n"`` a bare CR went out
unquoted, spreadsheets and Python's csv split the record there, and ``Sure.\\r=cmd|...``
put a live ``=cmd|...`` at the start of a cell of its own. With CRLF both CR and LF force
the quotes.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Sequence

from evalrunner.reports.writers.formulas import neutralise, neutralise_all

__all__ = ["neutralise", "to_csv"]


def to_csv(header: Sequence[str], rows: Iterable[Sequence[str]]) -> bytes:
    """The table as CSV bytes: every cell neutralised, every cell with a line break quoted.

    Rows are encoded as they come (``rows`` may be a generator), so only the file's bytes are
    held, not its text and a neutralised copy of every cell besides."""
    buf = io.BytesIO()
    # utf-8-sig: Excel opens the file with the right encoding on a double click.
    # A lone surrogate (JSON can carry one from a model) must not cost the whole report.
    text = io.TextIOWrapper(buf, encoding="utf-8-sig", errors="replace", newline="")
    writer = csv.writer(text, lineterminator="\r\n", quoting=csv.QUOTE_MINIMAL)
    writer.writerow(neutralise_all(header))
    for row in rows:
        writer.writerow(neutralise_all(row))
    text.flush()
    return buf.getvalue()
