"""A run's case table: filter, sort and cut one page, on the server.

The browser only ever receives one page of rows (50 by default), so a 10,000-case run's table
is as small on the wire and in the DOM as a 10-case run's; the filtering and sorting is a pass
over the already-parsed :class:`~evalrunner.reports.model.CaseRow` list.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from evalrunner.reports.model import CaseRow, ReportData

PAGE_SIZE = 50
MAX_PAGE_SIZE = 500
Status = Literal["", "ok", "target_error", "task_failed", "not_run", "failed", "passed"]


class CaseQuery(BaseModel):
    """What the case table's form sends (every field optional; unknown values match nothing
    rather than erroring, so an old bookmarked URL still opens)."""

    model_config = ConfigDict(extra="ignore")

    #: cases failing this metric (below its threshold)
    metric: str = ""
    category: str = ""
    status: Status = ""
    #: "original", "perturbed", or a perturbation's name
    perturbation: str = ""
    q: str = Field(default="", max_length=500)
    #: "case" (case id, iteration) or a metric name: sort by its score
    sort: str = "case"
    order: Literal["asc", "desc"] = "asc"
    page: int = Field(default=1, ge=1)
    size: int = Field(default=PAGE_SIZE, ge=1, le=MAX_PAGE_SIZE)


class CasePage(BaseModel):
    """One page of the filtered, sorted table."""

    rows: list[tuple[int, CaseRow]]
    total: int
    matching: int
    page: int
    pages: int


def all_rows(data: ReportData) -> list[CaseRow]:
    """The run's rows and its perturbed rows, in the order the reports list them; a row's
    position here is its address in the viewer (``/runs/<id>/cases/<n>``)."""
    return [*data.rows, *data.perturbed_rows]


def _failed(row: CaseRow) -> bool:
    return row.status != "ok" or any(r.success is False for r in row.results)


def _matches(row: CaseRow, query: CaseQuery, needle: str) -> bool:
    if query.metric:
        result = row.result(query.metric)
        if result is None or result.success is not False:
            return False
    if query.category and query.category not in row.categories:
        return False
    if query.status == "failed" and not _failed(row):
        return False
    if query.status == "passed" and _failed(row):
        return False
    if query.status not in ("", "failed", "passed") and row.status != query.status:
        return False
    if query.perturbation == "original" and row.perturbation is not None:
        return False
    if query.perturbation == "perturbed" and row.perturbation is None:
        return False
    if query.perturbation not in ("", "original", "perturbed") and (
        row.perturbation is None or row.perturbation.name != query.perturbation
    ):
        return False
    if needle:
        text = " ".join(
            (row.case_id, row.question, row.answer or "", row.expected_answer or "")
        ).casefold()
        if needle not in text:
            return False
    return True


def query_cases(rows: Sequence[CaseRow], query: CaseQuery) -> CasePage:
    """The page ``query`` asks for: matching rows (with their index in ``rows``), sorted.
    A row with no score for the sort metric goes last in either order."""
    needle = query.q.strip().casefold()
    picked = [(n, row) for n, row in enumerate(rows) if _matches(row, query, needle)]
    if query.sort != "case":
        metric = query.sort
        keyed = [(_score(r, metric), n, r) for n, r in picked]
        scored = [(s, n, r) for s, n, r in keyed if s is not None]
        scored.sort(key=lambda item: item[0], reverse=query.order == "desc")
        picked = [(n, r) for _, n, r in scored] + [(n, r) for s, n, r in keyed if s is None]
    elif query.order == "desc":
        picked.reverse()
    pages = max(1, math.ceil(len(picked) / query.size))
    page = min(query.page, pages)
    start = (page - 1) * query.size
    return CasePage(
        rows=picked[start : start + query.size],
        total=len(rows),
        matching=len(picked),
        page=page,
        pages=pages,
    )


def _score(row: CaseRow, metric: str) -> float | None:
    result = row.result(metric)
    return result.score if result is not None else None


def categories(rows: Sequence[CaseRow]) -> list[str]:
    return sorted({c for row in rows for c in row.categories})


def perturbations(rows: Sequence[CaseRow]) -> list[str]:
    return sorted({row.perturbation.name for row in rows if row.perturbation is not None})
