"""A run's case table: filter, sort and cut one page, on the server.

The browser only ever receives one page of rows (50 by default), so a 10,000-case run's table
is as small on the wire and in the DOM as a 10-case run's; the filtering and sorting is a pass
over the run's column index (:class:`~evalrunner.viewer.loaded.CaseIndex`); only the rows of
the page shown are validated into :class:`~evalrunner.reports.model.CaseRow`.
"""

from __future__ import annotations

import math
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from evalrunner.reports.model import CaseRow
from evalrunner.viewer.loaded import LoadedRun

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
    """One page of the filtered, sorted table: rows with their position in the run."""

    rows: list[tuple[int, CaseRow]]
    total: int
    matching: int
    page: int
    pages: int


def _keep(run: LoadedRun, n: int, query: CaseQuery, needle: str) -> bool:
    index = run.index
    if query.metric and index.success.get(query.metric, [None] * len(index))[n] is not False:
        return False
    if query.category and query.category not in index.categories[n]:
        return False
    if query.status == "failed" and not index.failed(n):
        return False
    if query.status == "passed" and index.failed(n):
        return False
    if query.status not in ("", "failed", "passed") and index.status[n] != query.status:
        return False
    name = index.perturbation[n]
    if query.perturbation == "original" and name is not None:
        return False
    if query.perturbation == "perturbed" and name is None:
        return False
    if query.perturbation not in ("", "original", "perturbed") and name != query.perturbation:
        return False
    return not needle or needle in run.text(n).casefold()


def query_cases(run: LoadedRun, query: CaseQuery) -> CasePage:
    """The page ``query`` asks for, from the run's column index; only that page's rows are
    validated into CaseRow. A row with no score for the sort metric goes last either way."""
    needle = query.q.strip().casefold()
    picked = [n for n in range(len(run)) if _keep(run, n, query, needle)]
    if query.sort != "case":
        scores = run.index.scores.get(query.sort, [None] * len(run))
        scored = sorted(
            (n for n in picked if scores[n] is not None),
            key=lambda n: scores[n] or 0.0,
            reverse=query.order == "desc",
        )
        picked = scored + [n for n in picked if scores[n] is None]
    elif query.order == "desc":
        picked.reverse()
    pages = max(1, math.ceil(len(picked) / query.size))
    page = min(query.page, pages)
    start = (page - 1) * query.size
    return CasePage(
        rows=[(n, run.row(n)) for n in picked[start : start + query.size]],
        total=len(run),
        matching=len(picked),
        page=page,
        pages=pages,
    )


def categories(run: LoadedRun) -> list[str]:
    return sorted({c for row in run.index.categories for c in row})


def perturbations(run: LoadedRun) -> list[str]:
    return sorted({p for p in run.index.perturbation if p is not None})


def related(run: LoadedRun, n: int) -> dict[str, Any]:
    """Row ``n``'s iterations, its perturbed variants (or its original) and its conversation's
    turns, as (position, row) pairs for links; found in the column index."""
    index = run.index
    case_id, iteration, name = index.case_id[n], index.iteration[n], index.perturbation[n]
    positions = range(len(run))
    iterations = [
        m for m in positions if index.case_id[m] == case_id and index.perturbation[m] == name
    ]
    origin = index.perturbation_of[n] or case_id
    variants = [
        m
        for m in positions
        if index.perturbation_of[m] == origin and index.iteration[m] == iteration and m != n
    ]
    original = None
    if name is not None:
        original = next(
            (
                m
                for m in positions
                if index.perturbation[m] is None
                and index.case_id[m] == origin
                and index.iteration[m] == iteration
            ),
            None,
        )
    conversation = index.conversation_id[n]
    turns = sorted(
        (
            m
            for m in positions
            if conversation
            and index.conversation_id[m] == conversation
            and index.iteration[m] == iteration
        ),
        key=lambda m: index.turn[m] or 0,
    )
    return {
        "iterations": [(m, run.row(m)) for m in iterations],
        "variants": [(m, run.row(m)) for m in variants],
        "original": (original, run.row(original)) if original is not None else None,
        "turns": [(m, run.row(m)) for m in turns],
    }
