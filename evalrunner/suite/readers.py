"""Read a test suite from xlsx, csv or json into a :class:`~evalrunner.suite.model.Suite`.

Every reader turns its file into the same intermediate rows (canonical column -> raw value,
plus where each value came from), and one builder turns rows into cases. That keeps the cell
rules of :mod:`evalrunner.suite.columns` identical across formats and puts the row, the
column and the fix into every error, because the Prepare step shows these messages to the
user verbatim.

Formats:

- ``.xlsx`` / ``.xlsm``: the first sheet whose first non-empty row has a question header
  (so an Instructions sheet may come first); row numbers are the spreadsheet's.
- ``.csv``: UTF-8, or UTF-16/UTF-32 with a byte-order mark (:mod:`.encoding`), delimiter
  ``,`` ``;`` or tab, chosen as the one that splits the header row into recognised columns;
  row numbers count records with the header as row 1, i.e. the row numbers a spreadsheet app
  shows for the file. Quotes are read strictly: an unclosed one is an error, not a cell that
  swallows the rest of the file.
- ``.json``: a list of row objects, ``{"cases": [...]}``, the H2O Eval Studio test-suite
  JSON (``tests[].test_cases[]``) or the H2O test-lab JSON (``dataset.inputs[]`` with
  answers already computed); see :func:`_read_h2o_lab` for the choice among models.
- ``.jsonl``: one row object per line (what ``evalrunner promote`` writes).
"""

from __future__ import annotations

import csv
import functools
import io
import json
import os
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path, PurePath
from typing import Any, Final

from pydantic import ValidationError

from evalrunner import input_limits
from evalrunner.errors import SuiteError
from evalrunner.input_limits import SuiteLimits
from evalrunner.sanitize import Sanitized, is_clean, sanitize_value
from evalrunner.suite import xlsx_checks
from evalrunner.suite.cells import (
    CellError,
    is_prior_turns,
    parse_categories,
    parse_condition,
    parse_conversation,
    parse_list,
    parse_logged_steps,
    parse_steps,
    parse_text,
    parse_turn_number,
)
from evalrunner.suite.columns import (
    ALIASES,
    canonical_column,
    column_letter,
    look_alike,
    map_headers,
)
from evalrunner.suite.conversations import conversation_from_cell, group_conversations
from evalrunner.suite.csv_errors import csv_error
from evalrunner.suite.encoding import decode_text
from evalrunner.suite.json_suites import read_json
from evalrunner.suite.model import Suite, TestCase
from evalrunner.suite.rows import Row, metadata_value
from evalrunner.suite.variants import link_variants

#: File extension -> format name.
SUPPORTED_FORMATS: Final[dict[str, str]] = {
    ".xlsx": "xlsx",
    ".xlsm": "xlsx",
    ".csv": "csv",
    ".json": "json",
    ".jsonl": "jsonl",
}


# ----------------------------------------------------------------------------- public API


def read_suite(data: bytes, filename: str, limits: SuiteLimits | None = None) -> Suite:
    """Read a suite from the bytes of a file; ``filename`` picks the format and names it.

    Bytes, not a path, because suites arrive from S3 objects as often as from disk. The
    suite's name is the file's stem (``test-suites/hr.xlsx`` -> ``hr``). ``limits``: what it
    may unpack to (a run's settings carry them; default: read from the environment now).
    """
    limits = SuiteLimits.from_env() if limits is None else limits
    suffix = PurePath(filename).suffix.lower()
    kind = SUPPORTED_FORMATS.get(suffix)
    if kind is None:
        supported = ", ".join(SUPPORTED_FORMATS)
        raise SuiteError(
            f"unsupported suite format '{suffix or '(no extension)'}'; supported formats: "
            f"{supported} (Excel workbook, CSV, JSON incl. H2O Eval Studio test suites and "
            "test labs)",
            source=filename,
        )
    _check_unpacked_size(len(data), filename, limits, workbook=data if kind == "xlsx" else None)
    if kind == "xlsx":
        rows = _read_xlsx(data, filename, limits)
    elif kind == "csv":
        rows = _read_csv(data, filename, limits)
    elif kind == "jsonl":
        rows = read_json(_jsonl_as_json(data, filename), filename, limits.cells)
    else:
        rows = read_json(data, filename, limits.cells)
    if len(rows) > limits.rows:
        raise _too_many_rows(filename, f"{len(rows):,} test cases", limits.rows)
    cells = sum(len(row.values) + len(row.metadata) for row in rows)
    if cells > limits.cells:
        found = f"{cells:,} cells in its {len(rows):,} test cases"
        raise _too_many_cells(filename, found, limits.cells)
    return Suite(name=PurePath(filename).stem, source=filename, cases=_build_cases(rows, filename))


def read_suite_file(path: str | os.PathLike[str], limits: SuiteLimits | None = None) -> Suite:
    """Read a suite from a local file (see :func:`read_suite`)."""
    source = os.fspath(path)
    limits = SuiteLimits.from_env() if limits is None else limits
    try:
        # A file over the limit on disk is over it unpacked too: refused before it is read.
        _check_unpacked_size(Path(source).stat().st_size, source, limits)
        data = Path(source).read_bytes()
    except OSError as exc:
        raise SuiteError(f"cannot read the file: {exc.strerror or exc}", source=source) from exc
    return read_suite(data, source, limits)


def _jsonl_as_json(data: bytes, filename: str) -> bytes:
    """JSON Lines (one row object per line, as ``evalrunner promote`` writes) as the JSON
    list the JSON reader takes; a line that is not an object is refused, naming it."""
    text = decode_text(data, source=filename, kind="json")
    items = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except ValueError as exc:
            raise SuiteError(f"line {number} is not valid JSON ({exc})", source=filename) from None
        if not isinstance(item, dict):
            kind = type(item).__name__
            raise SuiteError(f"line {number} is a {kind}, not a row object", source=filename)
        items.append(item)
    return json.dumps(items, ensure_ascii=False).encode("utf-8")


# -------------------------------------------------------------------------------- limits


def _check_unpacked_size(
    size: int, source: str, limits: SuiteLimits, *, workbook: bytes | None = None
) -> None:
    """Refuse a suite that unpacks to more than the limit (see :mod:`evalrunner.input_limits`):
    a CSV or JSON by its ``size``, an xlsx (its bytes given as ``workbook``) by the sizes its
    zip declares for its parts."""
    limit = limits.bytes
    sizes = input_limits.zip_unpacked_size(workbook) if workbook is not None else None
    if sizes is not None and sizes[0] > limit:
        message = input_limits.over_size(
            "the workbook unpacks to", sizes[0], limit, input_limits.SUITE_MB_ENV, packed=size
        )
        raise SuiteError(message, source=source)
    if size > limit:
        message = input_limits.over_size("the file is", size, limit, input_limits.SUITE_MB_ENV)
        raise SuiteError(message, source=source)


def _too_many_rows(source: str, found: str, limit: int, sheet: str | None = None) -> SuiteError:
    return SuiteError(
        f"the suite holds {found}, over the limit of {limit:,} rows; it was not read. Split "
        f"the suite, delete rows left empty or formatted below the table, or raise "
        f"{input_limits.SUITE_ROWS_ENV}",
        source=source,
        sheet=sheet,
    )


def _too_many_cells(source: str, found: str, limit: int, sheet: str | None = None) -> SuiteError:
    return SuiteError(
        f"the suite holds {found}, over the limit of {limit:,} cells; it "
        "was not read. Delete the rows and columns outside the table (empty or formatted "
        f"ones included), split the suite, or raise {input_limits.SUITE_CELLS_ENV}",
        source=source,
        sheet=sheet,
    )


# ------------------------------------------------------------------------------ building


def _build_cases(rows: Sequence[Row], source: str) -> list[TestCase]:
    """Parse every row into a case; enforce a non-empty suite and unique ids."""
    if not rows:
        raise SuiteError(
            "the suite has no test cases; add one row per case under the header row",
            source=source,
        )
    cases: list[TestCase] = []
    seen: dict[str, Row] = {}
    for index, row in enumerate(rows):
        _legacy_turns(row, source)
        if _blank(row.values.get("turns")):
            case = _build_case(row, index, source)
        else:
            case = conversation_from_cell(row, index, source, _build_case)
        first = seen.get(case.case_id)
        if first is not None:
            raise SuiteError(
                f"case id '{case.case_id}' is used by {_place(first)} and {_place(row)}; "
                "ids must be unique (leave the id empty to number cases automatically)",
                source=source,
                sheet=row.sheet,
                column=row.labels.get("id"),
            )
        seen[case.case_id] = row
        cases.append(case)

    def cell_error(i: int, column: str, message: str) -> SuiteError:
        at = rows[i]
        where = at.labels.get(column, column)
        return SuiteError(message, source=source, sheet=at.sheet, row=at.row, column=where)

    linked = link_variants(cases, [row.values for row in rows], cell_error)
    return group_conversations(linked, rows, cell_error, source)


def _legacy_turns(row: Row, source: str) -> None:
    """A ``turns`` cell of ``{"role", "content"}`` items (or ``user: ...`` lines) is the
    earlier-turns form ``turns`` stood for before it named scripted turns: read it as the
    conversation column, as it always was."""
    value = row.values.get("turns")
    if _blank(value) or not is_prior_turns(value):
        return
    if not _blank(row.values.get("conversation")):
        raise SuiteError(
            "both the conversation and the turns cell hold earlier turns; keep one",
            source=source,
            sheet=row.sheet,
            row=row.row,
            column=row.labels.get("turns"),
        )
    row.values["conversation"] = row.values.pop("turns")
    for names in (row.labels, row.cells):
        if "turns" in names:
            names["conversation"] = names.pop("turns")


def _place(row: Row) -> str:
    return f"row {row.row}" + (f" ({row.where})" if row.where else "")


def _build_case(row: Row, index: int, source: str) -> TestCase:
    values, metadata, found = _sanitized_cells(row)

    def fail(column: str, message: str) -> SuiteError:
        return row.error(column, message, source)

    def parsed(column: str, parse: Callable[[object], Any]) -> Any:
        try:
            value = parse(values.get(column))
        except CellError as exc:
            raise fail(column, str(exc)) from None
        # A JSON cell is clean text until it is parsed: its escapes ("\ud800", "\u0000")
        # decode to what sanitising replaces, so what the parser built is cleaned too. (Text
        # the parser returns is part of the cell's text, which was cleaned already.)
        if isinstance(value, list) and not is_clean(value):
            value, seen = sanitize_value(value)
            found.setdefault(column, Sanitized()).add(seen)
        return value

    question = parsed("question", parse_text)
    if question is None:
        raise fail("question", "the question is empty; every test case needs a question")
    answer = parsed("actual_answer", parse_text)
    contexts: list[str] | None = None
    if "retrieved_contexts" in values:
        contexts = parsed("retrieved_contexts", parse_list)
        # An empty cell means "retrieved nothing" only when the answer was computed too.
        if not contexts and answer is None:
            contexts = None
    case_id = parsed("id", parse_text) or f"case-{index + 1:04d}"
    # A column the row does not have is the field's default: parsing None gives the same.
    fields = {
        name: parsed(column, parse)
        for name, column, parse in _fields_for(tuple(values), answer is not None)
        if values[column] is not None
    }
    try:
        return TestCase(
            index=index,
            case_id=case_id,
            row=row.row,
            question=question,
            answer=answer,
            contexts=contexts,
            **fields,
            metadata=metadata,
            notes=[
                seen.describe(f"suite {_place(row)}, column {row.labels.get(column, column)}")
                for column, seen in found.items()
            ],
        )
    except ValidationError as exc:  # the parsers should make this unreachable
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors()
        )
        raise SuiteError(
            f"invalid test case: {problems}", source=source, sheet=row.sheet, row=row.row
        ) from None


@functools.lru_cache(maxsize=256)
def _fields_for(
    columns: tuple[str, ...], answered: bool
) -> tuple[tuple[str, str, Callable[[object], Any]], ...]:
    """The fields of :data:`_FIELDS` (and :data:`_LOGGED_FIELDS` for a case ``answered``)
    whose column is among ``columns``: the rows of one table share their columns, so this
    is worked out once per table rather than once per row and field."""
    specs = _FIELDS + (_LOGGED_FIELDS if answered else ())
    return tuple(spec for spec in specs if spec[1] in columns)


def _parse_logged_list(value: object) -> list[str] | None:
    """A logged list (retrieved documents): an empty cell is "not logged", not "none"."""
    return parse_list(value) or None


#: The TestCase fields read from one cell each: (field, column, how the cell is read), in
#: the order the cells are checked, so the first bad one is the error a user sees.
_FIELDS: Final[tuple[tuple[str, str, Callable[[object], Any]], ...]] = (
    ("expected_answer", "expected_answer", parse_text),
    ("expected_contexts", "expected_contexts", parse_list),
    ("expected_intent", "expected_intent", parse_text),
    ("expected_tool", "expected_tool", parse_text),
    ("expected_documents", "expected_documents", parse_list),
    ("expected_tools", "expected_tools", parse_list),
    ("expected_steps", "expected_steps", parse_steps),
    ("expected_data", "expected_data", parse_text),
    ("condition", "condition", parse_condition),
    ("categories", "categories", parse_categories),
    ("conversation", "conversation", parse_conversation),
    ("conversation_id", "conversation_id", parse_text),
    ("turn", "turn", parse_turn_number),
)
#: What else the system logged beside its answer (``*_by_system`` columns); only read with
#: a logged answer, since a case without one is sent to the target.
_LOGGED_FIELDS: Final[tuple[tuple[str, str, Callable[[object], Any]], ...]] = (
    ("documents", "retrieved_documents", _parse_logged_list),
    ("intent", "actual_intent", parse_text),
    ("tool", "actual_tool", parse_text),
    ("data", "retrieved_data", parse_text),
    ("steps", "actual_steps", parse_logged_steps),
)


def _sanitized_cells(row: Row) -> tuple[dict[str, Any], dict[str, Any], dict[str, Sanitized]]:
    """The row's cells and metadata, cleaned once here for every format (see
    :mod:`evalrunner.sanitize`), and what was replaced in each column that had any."""
    found: dict[str, Sanitized] = {}
    if row.clean or (is_clean(row.values) and is_clean(row.metadata)):  # nothing to copy
        return row.values, row.metadata, found
    cleaned: list[dict[str, Any]] = []
    for cells in (row.values, row.metadata):
        out: dict[str, Any] = {}
        for column, value in cells.items():
            (key, value), seen = sanitize_value((column, value))
            out[key] = value
            if seen:
                found[column] = seen
        cleaned.append(out)
    return cleaned[0], cleaned[1], found


def _blank(value: object) -> bool:
    return value is None or (isinstance(value, str) and not value.strip())


def _is_blank(values: Iterable[object]) -> bool:
    return all(_blank(v) for v in values)


def _tabular_rows(
    records: Iterable[tuple[int, Sequence[object]]],
    *,
    source: str,
    sheet: str | None,
    clean: bool = False,
) -> list[Row]:
    """Rows of a spreadsheet-like table: first non-blank record is the header. ``clean``:
    the records were cut from text known to hold nothing to sanitise (see ``Row.clean``)."""
    iterator = iter(records)
    # next() on the generator stops at the header, leaving `iterator` on the first data row.
    found = next(((n, r) for n, r in iterator if not _is_blank(r)), None)
    if found is None:
        raise SuiteError(
            "the suite has no test cases: the file has no header row and no data",
            source=source,
            sheet=sheet,
        )
    header_number, header = found
    hmap = map_headers(list(header), source=source, sheet=sheet, row=header_number)
    # The column letters, looked up once per column rather than once per cell.
    letters = {canonical: column_letter(pos + 1) for canonical, pos in hmap.columns.items()}
    rows: list[Row] = []
    for number, record in iterator:
        if _is_blank(record):
            continue
        values: dict[str, Any] = {}
        cells: dict[str, str] = {}
        labels: dict[str, str] = {}
        for canonical, pos in hmap.columns.items():
            values[canonical] = record[pos] if pos < len(record) else None
            cells[canonical] = f"{letters[canonical]}{number}"
            labels[canonical] = hmap.labels[pos]
        metadata: dict[str, Any] = {}
        for pos, name in hmap.extras.items():
            key = name if name not in metadata else f"{name} ({column_letter(pos + 1)})"
            metadata[key] = metadata_value(record[pos] if pos < len(record) else None)
        # Values under no header are kept rather than silently dropped.
        for pos, value in enumerate(record):
            if pos not in hmap.labels and not _blank(value):
                metadata[f"column {column_letter(pos + 1)}"] = metadata_value(value)
        rows.append(
            Row(
                row=number,
                values=values,
                labels=labels,
                cells=cells,
                metadata=metadata,
                sheet=sheet,
                clean=clean,
            )
        )
    if not rows:
        raise SuiteError(
            "the suite has no test cases; add one row per case under the header row "
            f"(row {header_number})",
            source=source,
            sheet=sheet,
        )
    return rows


# ---------------------------------------------------------------------------------- xlsx


def _read_xlsx(data: bytes, source: str, limits: SuiteLimits) -> list[Row]:
    xlsx_checks.refuse_ole_container(data, source=source)
    # openpyxl builds every cell of every sheet as it loads: count the rows first (the
    # header and a few blank or title rows above it come on top of the limit).
    over = input_limits.xml_part_over(data, limits.rows + _ROWS_ABOVE_TABLE, limits.cells)
    if over is not None:
        part, what, count = over
        found = f"more than {count - 1:,} {what} (in {part})"
        if what == "rows":
            raise _too_many_rows(source, found, limits.rows)
        raise _too_many_cells(source, found, limits.cells)
    import openpyxl  # its __init__ builds the workbook model and imports numpy: xlsx only

    try:
        # data_only: a formula cell is read as the value Excel saved, not as "=...".
        workbook = openpyxl.load_workbook(io.BytesIO(data), data_only=True)
    except Exception as exc:
        # openpyxl reports a damaged or mislabelled file with whatever its zip, XML or
        # attribute handling happened to raise (BadZipFile, InvalidFileException, KeyError,
        # ValueError, ...); for the user every one of them means the same thing.
        raise SuiteError(
            f"the file is not a readable xlsx workbook ({type(exc).__name__}: {exc}); open "
            "it in Excel and save it as 'Excel Workbook (.xlsx)', or export the suite as CSV",
            source=source,
        ) from None
    looked: list[str] = []
    for sheet in workbook.worksheets:
        _check_extent(sheet, source, limits)
        records = list(enumerate(sheet.iter_rows(values_only=True), start=1))
        header = next(((n, r) for n, r in records if not _is_blank(r)), None)
        if header is None:
            looked.append(f"'{sheet.title}' (empty)")
            continue
        number, cells = header
        if any(_names_question(c) for c in cells if c is not None):
            xlsx_checks.refuse_formulas_without_values(
                data, sheet, source=source, header_row=number
            )
            return _tabular_rows(records, source=source, sheet=sheet.title)
        shown = ", ".join(f"'{str(c).strip()}'" for c in cells if not _blank(c))
        looked.append(f"'{sheet.title}' (row {number}: {_truncate(shown, 120)})")
    raise SuiteError(
        "no sheet has a question column; looked at the first non-empty row of "
        f"{'; '.join(looked) or 'no sheets'}. The question column may be headed "
        f"{', '.join(ALIASES['question'])} (case, spaces and dashes do not matter)",
        source=source,
    )


#: Rows a sheet may have beyond the row limit: the header, and blank or title rows above it.
_ROWS_ABOVE_TABLE: Final = 10


def _check_extent(sheet: Any, source: str, limits: SuiteLimits) -> None:
    """Refuse a sheet whose extent, which every row is padded to when read, is too big: one
    cell far below or to the right of the table (a row number of 1,000,000 needs just one
    row element, column XFD one cell) would make millions of empty cells."""
    if sheet.max_row > limits.rows + _ROWS_ABOVE_TABLE:
        raise _too_many_rows(
            source, f"rows up to row {sheet.max_row:,}", limits.rows, sheet=sheet.title
        )
    extent = sheet.max_row * sheet.max_column
    if extent > limits.cells:
        span = f"A1:{column_letter(sheet.max_column)}{sheet.max_row}"
        raise _too_many_cells(
            source,
            f"a sheet spanning {span} ({extent:,} cells, the empty ones included)",
            limits.cells,
            sheet=sheet.title,
        )


def _names_question(header: object) -> bool:
    """Whether ``header`` heads the question (or turns) column, or a look-alike of it (which
    the header mapping then refuses, naming the cell, rather than a vaguer "no sheet has a
    question column")."""
    column = canonical_column(header) or (look_alike(header) or (None, ""))[0]
    return column in ("question", "turns")


def _truncate(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


# ----------------------------------------------------------------------------------- csv


def _pick_delimiter(text: str) -> str:
    """Choose ``,`` ``;`` or tab by which one splits the header into columns we know.

    csv.Sniffer guesses from character frequencies and is easily misled by commas inside
    answers; the header row, by contrast, is short and made of names we recognise.
    """
    first = next((line for line in text.splitlines() if line.strip()), "")
    best, best_score = ",", (False, -1, -1)
    for delimiter in (",", ";", "\t"):
        fields = next(csv.reader([first], delimiter=delimiter), [])
        known = [canonical_column(f) for f in fields]
        score = (
            "question" in known or "turns" in known,
            sum(k is not None for k in known),
            len(fields),
        )
        if score > best_score:
            best, best_score = delimiter, score
    return best


def _read_csv(data: bytes, source: str, limits: SuiteLimits) -> list[Row]:
    text = decode_text(data, source=source, kind="csv")
    delimiter = _pick_delimiter(text)
    # strict: without it, a quote that never closes makes csv read the rest of the file into
    # one cell and report nothing, so cases vanish; with it, that is an error we can place.
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter, strict=True)
    records: list[tuple[int, Sequence[object]]] = []
    start_line = 1  # the line of the file where the record being read begins
    max_rows, max_cells, cells = limits.rows, limits.cells, 0
    try:
        for number, record in enumerate(reader, start=1):
            records.append((number, record))
            start_line = reader.line_num + 1
            # Counted as read: 32 MB of "1," is 16 million fields, a string object each.
            cells += len(record)
            if cells > max_cells:
                found = f"more than {max_cells:,} fields (by row {number})"
                raise _too_many_cells(source, found, max_cells)
            if number > max_rows + _ROWS_ABOVE_TABLE:
                raise _too_many_rows(source, f"more than {number - 1:,} records", max_rows)
    except csv.Error as exc:
        raise csv_error(
            exc,
            text,
            delimiter,
            source=source,
            row=len(records) + 1,
            line=start_line,
            header=next((r for _, r in records if not _is_blank(r)), None),
        ) from None
    # Every cell is a piece of this text: one scan of it spares one per cell and key (an
    # xlsx or JSON suite has no such text: openpyxl and json decode escapes in each cell).
    return _tabular_rows(records, source=source, sheet=None, clean=is_clean(text))
