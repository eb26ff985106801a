"""Read a finished run's details (details.csv or details.xlsx) with the human verdicts a
reviewer added, and pair every metric's score with the human label of the same row.

Where the labels may be:

* a ``human_verdict`` column in the details sheet itself: one verdict per row, compared with
  every metric;
* per metric, a column ``human_verdict <metric>`` (or ``<metric> human_verdict``): it overrides
  the row's verdict for that metric;
* another sheet of details.xlsx, or a separate csv/xlsx file (``--labels``), with the columns
  ``case_id``, optionally ``iteration``, and the verdict columns above; rows are matched by
  case id (and iteration when given; without it the verdict applies to every iteration).

A verdict is pass/fail (also true/false, yes/no, 1/0, ok); an empty cell is "not labelled".
Anything else is an error naming the file, row and column. The metric's threshold and
direction come from the run's own results (the Results sheet of details.xlsx, or the
result.csv beside details.csv), else from the evaluator catalog.
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from evalrunner.errors import SuiteError

HUMAN = "human_verdict"
_PASS = {"pass", "passed", "true", "yes", "y", "1", "ok", "good"}
_FAIL = {"fail", "failed", "false", "no", "n", "0", "bad"}
_SCORE, _SUCCESS = " score", " success"


class LabelledRow(BaseModel):
    """One case × iteration with a human verdict for one metric."""

    case_id: str
    iteration: int
    question: str = ""
    score: float | None = None
    #: The run's own verdict at its threshold (None: not scored).
    success: bool | None = None
    human: bool


class MetricLabels(BaseModel):
    metric: str
    threshold: float
    higher_is_better: bool
    #: Where threshold and direction came from: "run" (its results) or "catalog".
    threshold_source: str
    rows: list[LabelledRow] = Field(default_factory=list)


Table = tuple[list[str], list[list[Any]]]


def _verdict(value: Any, where: str, row: int, column: str) -> bool | None:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if not text:
        return None
    if text in _PASS:
        return True
    if text in _FAIL:
        return False
    raise SuiteError(
        f"{str(value)[:40]!r} is not a verdict; write pass or fail (or leave it empty for "
        "a row nobody labelled)",
        source=where,
        row=row,
        column=column,
    )


def _number(value: Any) -> float | None:
    if value is None or isinstance(value, bool):
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def _flag(value: Any) -> bool | None:
    if isinstance(value, bool):
        return value
    text = str(value or "").strip().lower()
    return True if text == "true" else False if text == "false" else None


def _csv_table(path: Path) -> Table:
    with path.open(newline="", encoding="utf-8-sig") as handle:
        rows = list(csv.reader(handle))
    if not rows:
        raise SuiteError("the file is empty", source=str(path))
    return [h.strip() for h in rows[0]], [list(r) for r in rows[1:]]


def _sheets(path: Path) -> dict[str, Table]:
    from openpyxl import load_workbook

    try:
        book = load_workbook(io.BytesIO(path.read_bytes()), read_only=True, data_only=True)
    except Exception as exc:  # openpyxl raises many kinds on a file that is not a workbook
        raise SuiteError(f"not a readable .xlsx workbook ({exc})", source=str(path)) from exc
    out: dict[str, Table] = {}
    for sheet in book.worksheets:
        values = [list(r) for r in sheet.iter_rows(values_only=True)]
        if values:
            out[sheet.title] = ([str(h or "").strip() for h in values[0]], values[1:])
    return out


def _tables(path: Path) -> dict[str, Table]:
    if not path.is_file():
        raise SuiteError(
            "no such file; give the details.csv or details.xlsx of a run", source=str(path)
        )
    suffix = path.suffix.lower()
    if suffix == ".csv":
        return {"": _csv_table(path)}
    if suffix in (".xlsx", ".xlsm"):
        return _sheets(path)
    raise SuiteError("expected a .csv or .xlsx file", source=str(path))


def _records(table: Table) -> Iterator[tuple[int, dict[str, Any]]]:
    header, body = table
    for n, values in enumerate(body, start=2):
        if any(v not in (None, "") for v in values):
            yield n, dict(zip(header, values, strict=False))


def _metrics(header: Sequence[str]) -> list[str]:
    return [
        h[: -len(_SCORE)]
        for h in header
        if h.endswith(_SCORE) and f"{h[: -len(_SCORE)]}{_SUCCESS}" in header
    ]


def _label_columns(header: Sequence[str], metrics: Sequence[str]) -> dict[str | None, str]:
    """Verdict column per metric (None: the row's verdict for every metric)."""
    columns: dict[str | None, str] = {}
    lowered = {h.strip().lower(): h for h in header}
    if HUMAN in lowered:
        columns[None] = lowered[HUMAN]
    for metric in metrics:
        for name in (f"{HUMAN} {metric}", f"{metric} {HUMAN}", f"{HUMAN}: {metric}"):
            if name.lower() in lowered:
                columns[metric] = lowered[name.lower()]
    return columns


def _iteration(value: Any) -> int | None:
    number = _number(value)
    return int(number) if number is not None else None


def _labels_of(
    table: Table, metrics: Sequence[str], where: str
) -> dict[tuple[str, int | None], dict[str | None, bool]]:
    header = table[0]
    if "case_id" not in header:
        raise SuiteError(
            "the labels need a case_id column to match the run's rows", source=where, row=1
        )
    columns = _label_columns(header, metrics)
    labels: dict[tuple[str, int | None], dict[str | None, bool]] = {}
    for n, record in _records(table):
        key = (str(record.get("case_id") or "").strip(), _iteration(record.get("iteration")))
        for metric, column in columns.items():
            verdict = _verdict(record.get(column), where, n, column)
            if verdict is not None:
                labels.setdefault(key, {})[metric] = verdict
    return labels


def _run_thresholds(results: Table | None) -> dict[str, tuple[float, bool]]:
    if results is None:
        return {}
    out: dict[str, tuple[float, bool]] = {}
    for _, record in _records(results):
        if str(record.get("Iteration") or "all").strip().lower() != "all":
            continue
        threshold = _number(record.get("Threshold"))
        direction = _flag(record.get("Higher is better"))
        metric = str(record.get("Metric") or "")
        if metric and threshold is not None and direction is not None:
            out.setdefault(metric, (threshold, direction))
    return out


def _catalog_threshold(metric: str) -> tuple[float, bool] | None:
    from evalrunner.evaluators import available

    for cls in available().values():
        for spec in cls.metrics:
            if spec.name == metric:
                return spec.threshold, spec.higher_is_better
    return None


def read_labelled_run(details: Path, labels: Path | None = None) -> list[MetricLabels]:
    """Every metric of the run with the rows a human labelled, in the run's column order."""
    tables = _tables(details)
    detail_name = next((n for n in tables if n in ("", "Details")), None)
    if detail_name is None:
        raise SuiteError("no Details sheet: is this a run's details.xlsx?", source=str(details))
    table = tables[detail_name]
    metrics = _metrics(table[0])
    if not metrics:
        raise SuiteError(
            "no '<metric> score' / '<metric> success' columns: is this a run's details file?",
            source=str(details),
        )
    results = tables.get("Results")
    if results is None and details.suffix.lower() == ".csv":
        sibling = details.with_name(details.name.replace("details.csv", "result.csv"))
        if sibling != details and sibling.is_file():
            results = _csv_table(sibling)
    thresholds = _run_thresholds(results)

    sources: list[tuple[Table, str]] = []
    if labels is not None:
        sources += [
            (t, f"{labels}{f' sheet {n!r}' if n else ''}") for n, t in _tables(labels).items()
        ]
    else:
        sources.append((table, str(details)))
        sources += [
            (t, f"{details} sheet {n!r}")
            for n, t in tables.items()
            if n not in (detail_name, "Results") and _label_columns(t[0], metrics)
        ]
    given: dict[tuple[str, int | None], dict[str | None, bool]] = {}
    for source, where in sources:
        for key, verdicts in _labels_of(source, metrics, where).items():
            given.setdefault(key, {}).update(verdicts)
    if not given:
        raise SuiteError(
            f"no human verdicts found: add a column '{HUMAN}' (pass/fail) to the details "
            f"sheet, or per metric '{HUMAN} <metric>', or give --labels with case_id and "
            f"{HUMAN} columns",
            source=str(labels or details),
        )

    out: list[MetricLabels] = []
    for metric in metrics:
        run = thresholds.get(metric)
        known = run or _catalog_threshold(metric) or (0.5, True)
        entry = MetricLabels(
            metric=metric,
            threshold=known[0],
            higher_is_better=known[1],
            threshold_source="run"
            if run
            else "catalog"
            if _catalog_threshold(metric)
            else "default",
        )
        for _, record in _records(table):
            case_id = str(record.get("case_id") or "").strip()
            iteration = _iteration(record.get("iteration")) or 1
            verdicts = given.get((case_id, iteration)) or given.get((case_id, None)) or {}
            human = verdicts.get(metric, verdicts.get(None))
            if human is None:
                continue
            entry.rows.append(
                LabelledRow(
                    case_id=case_id,
                    iteration=iteration,
                    question=str(record.get("question") or ""),
                    score=_number(record.get(f"{metric}{_SCORE}")),
                    success=_flag(record.get(f"{metric}{_SUCCESS}")),
                    human=human,
                )
            )
        out.append(entry)
    return out
