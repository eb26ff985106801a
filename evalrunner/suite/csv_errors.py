"""Why Python's csv module gave up on a suite, told as the cause, the place and the fix.

The suite reader parses CSV strictly, because the lenient default reads a quote that never
closes as one cell holding the rest of the file and reports nothing: cases vanish and the
run passes. Strict parsing raises instead, with a terse message and no position; this module
names the row (a spreadsheet's row number: records, the header being row 1), the line of the
file where that record begins, and the column whose quote opened.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence

from evalrunner.errors import SuiteError
from evalrunner.suite.columns import column_letter


def csv_error(
    exc: csv.Error,
    text: str,
    delimiter: str,
    *,
    source: str,
    row: int,
    line: int,
    header: Sequence[object] | None,
) -> SuiteError:
    """The csv module's complaint about the record that starts at ``line`` (record ``row``),
    turned into the cause and the fix. The usual cause is a quote: an opening quote that never
    closes (csv reads to the end of the file, or past its field size limit, looking for it),
    or text after a closing quote."""
    message = str(exc)
    position = _last_field(text, line, delimiter)
    letter = column_letter(position + 1)
    label = header[position] if header is not None and position < len(header) else None
    column = str(label).strip() if label else letter
    where = f"cell {letter}{row}, line {line} of the file"
    fix = 'add the closing quote, and double every quote inside a quoted cell ("")'
    if "unexpected end of data" in message:
        return SuiteError(
            f"the quote that opens this cell ({where}) is never closed, so the rest of the file "
            f"would be read as this one cell; {fix}",
            source=source,
            row=row,
            column=column,
        )
    if "field larger than field limit" in message:
        return SuiteError(
            f"the cell that starts here ({where}) runs past {csv.field_size_limit():,} "
            f"characters, the most a CSV cell may hold: most likely its opening quote is never "
            f"closed ({fix}); otherwise shorten the cell or give the suite as xlsx or JSON",
            source=source,
            row=row,
            column=column,
        )
    if "expected after" in message:
        return SuiteError(
            f"a quoted cell in this row (from line {line} of the file) has text after its "
            'closing quote; double every quote inside a quoted cell (""), or remove the quotes '
            "around the cell",
            source=source,
            row=row,
        )
    return SuiteError(
        f"the CSV cannot be parsed (the record from line {line} of the file): {message}",
        source=source,
        row=row,
    )


def _last_field(text: str, line: int, delimiter: str) -> int:
    """Index of the last field of the record that starts at ``line``, read leniently: the
    field an unclosed quote opened. Only the record's start is read when the whole record is
    too big for csv (an unclosed quote early in a long file)."""
    rest = "".join(io.StringIO(text, newline="").readlines()[line - 1 :])
    for chunk in (rest, rest[: csv.field_size_limit() // 2]):
        try:
            reader = csv.reader(io.StringIO(chunk, newline=""), delimiter=delimiter)
            return len(next(reader, [""])) - 1
        except csv.Error:
            continue
    return 0
