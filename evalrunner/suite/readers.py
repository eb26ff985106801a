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
"""

from __future__ import annotations

import csv
import datetime as _dt
import io
import json
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePath
from typing import Any, Final

import openpyxl
from openpyxl.utils import get_column_letter
from pydantic import ValidationError

from evalrunner.errors import SuiteError
from evalrunner.sanitize import sanitize_value
from evalrunner.suite import xlsx_checks
from evalrunner.suite.columns import (
    ALIASES,
    CellError,
    canonical_column,
    map_headers,
    parse_categories,
    parse_condition,
    parse_conversation,
    parse_list,
    parse_text,
)
from evalrunner.suite.csv_errors import csv_error
from evalrunner.suite.encoding import decode_text
from evalrunner.suite.model import Suite, TestCase
from evalrunner.suite.variants import link_variants

#: File extension -> format name.
SUPPORTED_FORMATS: Final[dict[str, str]] = {
    ".xlsx": "xlsx",
    ".xlsm": "xlsx",
    ".csv": "csv",
    ".json": "json",
}


@dataclass
class _Row:
    """One source row before its cells are parsed, with what is needed to name a cell."""

    row: int
    values: dict[str, Any]
    labels: dict[str, str] = field(default_factory=dict)  # canonical -> header as written
    cells: dict[str, str] = field(default_factory=dict)  # canonical -> "B7" (spreadsheets)
    metadata: dict[str, Any] = field(default_factory=dict)
    sheet: str | None = None
    where: str | None = None  # JSON path such as "tests[0].test_cases[2]"


# ----------------------------------------------------------------------------- public API


def read_suite(data: bytes, filename: str) -> Suite:
    """Read a suite from the bytes of a file; ``filename`` picks the format and names it.

    Bytes, not a path, because suites arrive from S3 objects as often as from disk. The
    suite's name is the file's stem (``test-suites/hr.xlsx`` -> ``hr``).
    """
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
    if kind == "xlsx":
        rows = _read_xlsx(data, filename)
    elif kind == "csv":
        rows = _read_csv(data, filename)
    else:
        rows = _read_json(data, filename)
    return Suite(name=PurePath(filename).stem, source=filename, cases=_build_cases(rows, filename))


def read_suite_file(path: str | os.PathLike[str]) -> Suite:
    """Read a suite from a local file (see :func:`read_suite`)."""
    source = os.fspath(path)
    try:
        data = Path(source).read_bytes()
    except OSError as exc:
        raise SuiteError(f"cannot read the file: {exc.strerror or exc}", source=source) from exc
    return read_suite(data, source)


# ------------------------------------------------------------------------------ building


def _build_cases(rows: Sequence[_Row], source: str) -> list[TestCase]:
    """Parse every row into a case; enforce a non-empty suite and unique ids."""
    if not rows:
        raise SuiteError(
            "the suite has no test cases; add one row per case under the header row",
            source=source,
        )
    cases: list[TestCase] = []
    seen: dict[str, _Row] = {}
    for index, row in enumerate(rows):
        case = _build_case(row, index, source)
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

    return link_variants(cases, [row.values for row in rows], cell_error)


def _place(row: _Row) -> str:
    return f"row {row.row}" + (f" ({row.where})" if row.where else "")


def _build_case(row: _Row, index: int, source: str) -> TestCase:
    values, metadata, notes = _sanitized_cells(row)

    def fail(column: str, message: str) -> SuiteError:
        cell = row.cells.get(column)
        hints = [h for h in (f"cell {cell}" if cell else None, row.where) if h]
        suffix = f" ({', '.join(hints)})" if hints else ""
        return SuiteError(
            message + suffix,
            source=source,
            sheet=row.sheet,
            row=row.row,
            column=row.labels.get(column, column),
        )

    def parsed(column: str, parse: Callable[[object], Any]) -> Any:
        try:
            return parse(values.get(column))
        except CellError as exc:
            raise fail(column, str(exc)) from None

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
    try:
        return TestCase(
            index=index,
            case_id=parsed("id", parse_text) or f"case-{index + 1:04d}",
            row=row.row,
            question=question,
            expected_answer=parsed("expected_answer", parse_text),
            expected_contexts=parsed("expected_contexts", parse_list),
            expected_intent=parsed("expected_intent", parse_text),
            expected_tool=parsed("expected_tool", parse_text),
            expected_documents=parsed("expected_documents", parse_list),
            expected_data=parsed("expected_data", parse_text),
            condition=parsed("condition", parse_condition),
            categories=parsed("categories", parse_categories),
            conversation=parsed("conversation", parse_conversation),
            answer=answer,
            contexts=contexts,
            **_logged(parsed, answer is not None),
            metadata=metadata,
            notes=notes,
        )
    except ValidationError as exc:  # the parsers should make this unreachable
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors()
        )
        raise SuiteError(
            f"invalid test case: {problems}", source=source, sheet=row.sheet, row=row.row
        ) from None


def _logged(
    parsed: Callable[[str, Callable[[object], Any]], Any], answered: bool
) -> dict[str, Any]:
    """What else the system logged beside its answer (``*_by_system`` columns); only read
    with a logged answer, since a case without one is sent to the target."""
    if not answered:
        return {}
    return {
        "documents": parsed("retrieved_documents", parse_list) or None,
        "intent": parsed("actual_intent", parse_text),
        "tool": parsed("actual_tool", parse_text),
        "data": parsed("retrieved_data", parse_text),
    }


def _sanitized_cells(row: _Row) -> tuple[dict[str, Any], dict[str, Any], list[str]]:
    """The row's cells and metadata, cleaned once here for every format (see
    :mod:`evalrunner.sanitize`), and a note per column that had characters replaced."""
    notes: list[str] = []
    cleaned: list[dict[str, Any]] = []
    for cells in (row.values, row.metadata):
        out: dict[str, Any] = {}
        for column, value in cells.items():
            (key, value), found = sanitize_value((column, value))
            out[key] = value
            if found:
                label = row.labels.get(column, column)
                notes.append(found.describe(f"suite {_place(row)}, column {label}"))
        cleaned.append(out)
    return cleaned[0], cleaned[1], notes


def _metadata_value(value: object) -> Any:
    """Keep metadata JSON-friendly: it travels in the case manifest and into details.csv."""
    if isinstance(value, _dt.datetime | _dt.date | _dt.time):
        return value.isoformat()
    if isinstance(value, str):
        return value.strip() or None
    return value


def _is_blank(values: Iterable[object]) -> bool:
    return all(v is None or (isinstance(v, str) and not v.strip()) for v in values)


def _tabular_rows(
    records: Iterable[tuple[int, Sequence[object]]], *, source: str, sheet: str | None
) -> list[_Row]:
    """Rows of a spreadsheet-like table: first non-blank record is the header."""
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
    rows: list[_Row] = []
    for number, record in iterator:
        if _is_blank(record):
            continue
        values: dict[str, Any] = {}
        cells: dict[str, str] = {}
        labels: dict[str, str] = {}
        for canonical, pos in hmap.columns.items():
            values[canonical] = record[pos] if pos < len(record) else None
            cells[canonical] = f"{get_column_letter(pos + 1)}{number}"
            labels[canonical] = hmap.labels[pos]
        metadata: dict[str, Any] = {}
        for pos, name in hmap.extras.items():
            key = name if name not in metadata else f"{name} ({get_column_letter(pos + 1)})"
            metadata[key] = _metadata_value(record[pos] if pos < len(record) else None)
        # Values under no header are kept rather than silently dropped.
        for pos, value in enumerate(record):
            if pos not in hmap.labels and not _is_blank([value]):
                metadata[f"column {get_column_letter(pos + 1)}"] = _metadata_value(value)
        rows.append(
            _Row(
                row=number,
                values=values,
                labels=labels,
                cells=cells,
                metadata=metadata,
                sheet=sheet,
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


def _read_xlsx(data: bytes, source: str) -> list[_Row]:
    xlsx_checks.refuse_ole_container(data, source=source)
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
        records = list(enumerate(sheet.iter_rows(values_only=True), start=1))
        header = next(((n, r) for n, r in records if not _is_blank(r)), None)
        if header is None:
            looked.append(f"'{sheet.title}' (empty)")
            continue
        number, cells = header
        if any(canonical_column(c) == "question" for c in cells if c is not None):
            xlsx_checks.refuse_formulas_without_values(
                data, sheet, source=source, header_row=number
            )
            return _tabular_rows(records, source=source, sheet=sheet.title)
        shown = ", ".join(f"'{str(c).strip()}'" for c in cells if not _is_blank([c]))
        looked.append(f"'{sheet.title}' (row {number}: {_truncate(shown, 120)})")
    raise SuiteError(
        "no sheet has a question column; looked at the first non-empty row of "
        f"{'; '.join(looked) or 'no sheets'}. The question column may be headed "
        f"{', '.join(ALIASES['question'])} (case, spaces and dashes do not matter)",
        source=source,
    )


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
        score = ("question" in known, sum(k is not None for k in known), len(fields))
        if score > best_score:
            best, best_score = delimiter, score
    return best


def _read_csv(data: bytes, source: str) -> list[_Row]:
    text = decode_text(data, source=source, kind="csv")
    delimiter = _pick_delimiter(text)
    # strict: without it, a quote that never closes makes csv read the rest of the file into
    # one cell and report nothing, so cases vanish; with it, that is an error we can place.
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter, strict=True)
    records: list[tuple[int, Sequence[object]]] = []
    start_line = 1  # the line of the file where the record being read begins
    try:
        for number, record in enumerate(reader, start=1):
            records.append((number, record))
            start_line = reader.line_num + 1
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
    return _tabular_rows(records, source=source, sheet=None)


# ---------------------------------------------------------------------------------- json


_JSON_SHAPES = (
    'a list of case objects, {"cases": [...]}, an H2O Eval Studio test suite '
    '({"tests": [{"test_cases": [...]}]}) or an H2O test lab ({"dataset": {"inputs": '
    "[...]}})"
)


def _read_json(data: bytes, source: str) -> list[_Row]:
    text = decode_text(data, source=source, kind="json")
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise SuiteError(
            f"the file is not valid JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}",
            source=source,
        ) from None
    if isinstance(doc, list):
        return _json_rows(doc, source=source, path="")
    if isinstance(doc, dict):
        if "cases" in doc:
            return _json_rows(_json_list(doc, "cases", source), source=source, path="cases")
        if "tests" in doc:
            return _read_h2o_suite(doc, source)
        if any(k in doc for k in ("dataset", "raw_dataset", "inputs")):
            return _read_h2o_lab(doc, source)
        keys = ", ".join(f"'{k}'" for k in list(doc)[:10]) or "none"
        raise SuiteError(
            f"unrecognised JSON suite (top-level keys: {keys}); expected {_JSON_SHAPES}",
            source=source,
        )
    raise SuiteError(
        f"unrecognised JSON suite (a {type(doc).__name__} at the top level); expected "
        f"{_JSON_SHAPES}",
        source=source,
    )


def _json_list(doc: Mapping[str, Any], key: str, source: str, where: str = "") -> list[Any]:
    value = doc.get(key)
    if not isinstance(value, list):
        raise SuiteError(
            f"'{where}{key}' must be a list, found {type(value).__name__}", source=source
        )
    return value


def _json_row(
    item: Mapping[str, Any],
    *,
    number: int,
    where: str,
    source: str,
    preset: Mapping[str, tuple[str, Any]] | None = None,
    metadata: Mapping[str, Any] | None = None,
) -> _Row:
    """One JSON object -> row, through the same header aliases as the tabular formats.

    ``preset`` supplies canonical values the caller already resolved (H2O fields that need
    more than an alias), as canonical -> (key as written, value).
    """
    keys = [str(k) for k in item]
    hmap = map_headers(keys, source=source, row=number, letters=False, noun="keys", note=where)
    values: dict[str, Any] = {}
    labels: dict[str, str] = {}
    for canonical, pos in hmap.columns.items():
        labels[canonical] = keys[pos]
        values[canonical] = item[keys[pos]]
    for canonical, (label, value) in (preset or {}).items():
        if canonical in values:
            raise SuiteError(
                f"keys '{labels[canonical]}' and '{label}' both name the column "
                f"'{canonical}'; keep one of them ({where})",
                source=source,
                row=number,
            )
        values[canonical] = value
        labels[canonical] = label
    meta = {name: _metadata_value(item[keys[pos]]) for pos, name in hmap.extras.items()}
    meta.update(metadata or {})
    return _Row(row=number, values=values, labels=labels, metadata=meta, where=where)


def _json_rows(items: list[Any], *, source: str, path: str) -> list[_Row]:
    rows: list[_Row] = []
    for i, item in enumerate(items):
        where = f"{path}[{i}]" if path else f"item {i + 1}"
        if not isinstance(item, dict):
            raise SuiteError(
                f"{where} is not an object with a question; each case is an object such as "
                '{"question": "...", "expected_answer": "..."}',
                source=source,
                row=i + 1,
            )
        rows.append(_json_row(item, number=i + 1, where=where, source=source))
    return rows


def _h2o_condition(
    item: dict[str, Any], expression_key: str, list_key: str
) -> tuple[dict[str, tuple[str, Any]], dict[str, Any]]:
    """Resolve H2O's two condition fields into our one.

    H2O keeps the list form (``constraints`` / ``output_constraints``) and the expression
    (``condition`` / ``output_condition``) side by side; a case has one condition, so a
    non-empty expression wins and the list is kept in metadata so nothing is lost.
    """
    expression = item.pop(expression_key, None)
    constraints = item.pop(list_key, None)
    preset: dict[str, tuple[str, Any]] = {}
    metadata: dict[str, Any] = {}
    has_expression = isinstance(expression, str) and expression.strip()
    if has_expression:
        preset["condition"] = (expression_key, expression)
        if constraints:
            metadata[list_key] = constraints
    elif constraints:
        preset["condition"] = (list_key, constraints)
    return preset, metadata


def _read_h2o_suite(doc: Mapping[str, Any], source: str) -> list[_Row]:
    """H2O Eval Studio test suite: ``{"tests": [{"documents", "test_cases": [...]}]}``.

    A test's ``documents`` are the corpus the RAG is built from, not retrieval ground truth
    for each case, so they go to metadata (``corpus``) rather than to expected_documents.
    """
    rows: list[_Row] = []
    for t, test in enumerate(_json_list(doc, "tests", source)):
        if not isinstance(test, dict):
            raise SuiteError(f"tests[{t}] is not an object", source=source)
        test_meta: dict[str, Any] = {}
        if test.get("key"):
            test_meta["test_key"] = test["key"]
        if test.get("documents"):
            test_meta["corpus"] = test["documents"]
        for c, case in enumerate(_json_list(test, "test_cases", source, f"tests[{t}].")):
            where = f"tests[{t}].test_cases[{c}]"
            number = len(rows) + 1
            if not isinstance(case, dict):
                raise SuiteError(f"{where} is not an object", source=source, row=number)
            item = dict(case)
            preset, meta = _h2o_condition(item, "condition", "constraints")
            rows.append(
                _json_row(
                    item,
                    number=number,
                    where=where,
                    source=source,
                    preset=preset,
                    metadata={**test_meta, **meta},
                )
            )
    return rows


def _read_h2o_lab(doc: Mapping[str, Any], source: str) -> list[_Row]:
    """H2O test lab: ``dataset.inputs[]`` (answers computed) or ``raw_dataset.inputs[]``.

    A lab holds one input row per (test case, model). A case here has one answer, so for
    each test case the row of the model listed first in ``models`` is kept (rows of models
    not listed come after, then file order); the model's key and name, and the names of
    the other models that answered, go to the case's metadata. Labs with one model per
    test case (the usual RAG lab, one model per corpus) keep every row. ``dataset`` is used
    when it has inputs, else ``raw_dataset`` (the suite before answers, so the target is
    called); an LLM dataset ``{"inputs": [...]}`` is read the same way.
    """
    section_name = next(
        (
            name
            for name in ("dataset", "raw_dataset")
            if isinstance(doc.get(name), dict) and doc[name].get("inputs")
        ),
        None,
    )
    section = doc[section_name] if section_name else doc
    prefix = f"{section_name}.inputs" if section_name else "inputs"
    inputs = section.get("inputs")
    if not isinstance(inputs, list):
        raise SuiteError(
            f"the test lab has no '{prefix}' list; expected {_JSON_SHAPES}", source=source
        )
    models = [m for m in doc.get("models") or [] if isinstance(m, dict)]
    rank = {m.get("key"): i for i, m in enumerate(models)}
    names = {m.get("key"): m.get("llm_model_name") or m.get("name") for m in models}

    chosen: dict[str, int] = {}  # test case identity -> position of the row kept
    answered_by: dict[str, list[Any]] = {}
    for pos, item in enumerate(inputs):
        if not isinstance(item, dict):
            raise SuiteError(f"{prefix}[{pos}] is not an object", source=source, row=pos + 1)
        identity = _lab_identity(item)
        answered_by.setdefault(identity, []).append(item.get("model_key"))
        kept = chosen.get(identity)
        if kept is None or _rank(item, rank) < _rank(inputs[kept], rank):
            chosen[identity] = pos

    rows: list[_Row] = []
    for identity, pos in chosen.items():  # dict order: first appearance of each case
        item = dict(inputs[pos])
        model_key = item.get("model_key")
        case_key = item.pop("test_case_key", None) or _strip_model(item.get("key"), model_key)
        item.pop("key", None)
        preset, meta = _h2o_condition(item, "output_condition", "output_constraints")
        if "context" in item:  # in a lab, "context" is what the model retrieved
            preset["retrieved_contexts"] = ("context", item.pop("context"))
        if case_key:
            preset["id"] = ("key", case_key)
        if model_key:
            meta["model"] = names.get(model_key)
            others = [names.get(k, k) for k in answered_by[identity] if k != model_key]
            if others:
                meta["other_models"] = others
        rows.append(
            _json_row(
                item,
                number=pos + 1,
                where=f"{prefix}[{pos}]",
                source=source,
                preset=preset,
                metadata=meta,
            )
        )
    return rows


def _strip_model(key: Any, model_key: Any) -> Any:
    """H2O may key a lab row ``<test_case_key>_<model_key>``; the case is the first part."""
    if isinstance(key, str) and isinstance(model_key, str) and model_key:
        suffix = f"_{model_key}"
        if key.endswith(suffix) and len(key) > len(suffix):
            return key[: -len(suffix)]
    return key


def _lab_identity(item: Mapping[str, Any]) -> str:
    key = item.get("test_case_key") or _strip_model(item.get("key"), item.get("model_key"))
    return f"key:{key}" if key else f"input:{item.get('input')}"


def _rank(item: Mapping[str, Any], rank: Mapping[Any, int]) -> int:
    return rank.get(item.get("model_key"), len(rank))
