"""A run's report.json as the viewer holds it: everything but the rows as the typed
:class:`~evalrunner.reports.model.ReportData`, the rows as parsed JSON, validated into
:class:`~evalrunner.reports.model.CaseRow` one at a time as a page shows them, and a column
index (ids, status, categories, each metric's score and verdict) that the case table filters
and sorts.

Why not ``ReportData.model_validate_json`` on the whole file: a 10,000-case run with thirty
metrics is 300,000 MetricResult objects, about 7 s and 700 MB (bench/RESULTS.md, issue 33);
the JSON parse alone (pydantic-core's parser) is a fraction of that, and a page shows 50 rows.
The full model is still built when a reader needs all of it (compare, leaderboard), once.

The parse and the index run with Python's cyclic garbage collector paused
(:func:`collection_paused`): they allocate about a million dicts and lists, each allocation
counts towards the collector's thresholds, and every full collection it triggers on the way
walks everything allocated so far, so a 10,000-case run's first open spent about as long in
the collector as in the parse (bench/RESULTS.md, issue 33). Parsed JSON holds no reference
cycles, so nothing the pause could have freed is kept.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError
from pydantic_core import from_json

from evalrunner.errors import StorageError
from evalrunner.reports.model import CaseRow, ReportData


@dataclass
class CaseIndex:
    """One entry per row (the run's rows, then its perturbed rows), by position."""

    case_id: list[str] = field(default_factory=list)
    iteration: list[int] = field(default_factory=list)
    status: list[str] = field(default_factory=list)
    categories: list[list[str]] = field(default_factory=list)
    perturbation: list[str | None] = field(default_factory=list)
    perturbation_of: list[str | None] = field(default_factory=list)
    conversation_id: list[str | None] = field(default_factory=list)
    turn: list[int | None] = field(default_factory=list)
    #: metric → per row: score (None: not scored) and verdict (None: no verdict)
    scores: dict[str, list[float | None]] = field(default_factory=dict)
    success: dict[str, list[bool | None]] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.case_id)

    def failed(self, n: int) -> bool:
        return self.status[n] != "ok" or any(s[n] is False for s in self.success.values())


_paused = 0
_was_enabled = True
_paused_lock = threading.Lock()


@contextmanager
def collection_paused() -> Iterator[None]:
    """The cyclic garbage collector off for the block (reference counting still frees), and
    back to how it was when the last overlapping block ends (the server loads reports from
    several threads at once)."""
    global _paused, _was_enabled
    with _paused_lock:
        if _paused == 0:
            _was_enabled = gc.isenabled()
            gc.disable()
        _paused += 1
    try:
        yield
    finally:
        with _paused_lock:
            _paused -= 1
            if _paused == 0 and _was_enabled:
                gc.enable()


def _index(raw: Sequence[dict[str, Any]], metrics: Sequence[str]) -> CaseIndex:
    index = CaseIndex(
        scores={m: [None] * len(raw) for m in metrics},
        success={m: [None] * len(raw) for m in metrics},
    )
    for n, row in enumerate(raw):
        try:
            _index_row(index, n, row, len(raw))
        except (AttributeError, TypeError, ValueError) as exc:
            # a report.json whose row lies about its types (a list where an object goes, a
            # word for an iteration): the store names the run unreadable, with the row
            raise ValueError(f"row {n} is not a case row ({type(exc).__name__}: {exc})") from None
    return index


def _index_row(index: CaseIndex, n: int, row: dict[str, Any], rows: int) -> None:
    index.case_id.append(str(row.get("case_id", "")))
    index.iteration.append(int(row.get("iteration") or 1))
    index.status.append(str(row.get("status", "")))
    index.categories.append(list(row.get("categories") or []))
    perturbation = row.get("perturbation") or {}
    index.perturbation.append(perturbation.get("name"))
    index.perturbation_of.append(perturbation.get("of"))
    index.conversation_id.append(row.get("conversation_id"))
    index.turn.append(row.get("turn"))
    for result in row.get("results") or ():
        metric = result.get("metric")
        if metric not in index.scores:
            index.scores[metric] = [None] * rows
            index.success[metric] = [None] * rows
        index.scores[metric][n] = result.get("score")
        index.success[metric][n] = result.get("success")


class LoadedRun:
    """One run's report, parsed once; rows validated on demand."""

    #: rows kept validated (a page's worth, and the cases a reviewer opens)
    KEPT_ROWS = 512

    def __init__(self, data: bytes) -> None:
        # "all": the short strings every row repeats (metric and evaluator names, statuses,
        # categories) are held once, not once per row: about half the memory of the rows
        with collection_paused():
            parsed = from_json(data, cache_strings="all")
            if not isinstance(parsed, dict):
                raise ValueError("not a JSON object")
            rows = parsed.pop("rows", None) or []
            perturbed = parsed.pop("perturbed_rows", None) or []
            #: the report without its rows (verdict, problems, stats, gates, …), fully typed
            self.head = ReportData.model_validate({**parsed, "rows": [], "perturbed_rows": []})
            #: rows before this position are the run's own; after it, its perturbed copies
            self.originals = len(rows)
            self._raw: list[dict[str, Any]] = [*rows, *perturbed]
            self.index = _index(self._raw, [m.metric for m in self.head.metrics])
        self._rows: dict[int, CaseRow] = {}
        self._full: ReportData | None = None
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._raw)

    def row(self, n: int) -> CaseRow:
        """Row ``n`` (0 ≤ n < len) as the typed model."""
        with self._lock:
            cached = self._rows.get(n)
            if cached is None:
                cached = _case_row(self._raw, n)
                if len(self._rows) >= self.KEPT_ROWS:
                    self._rows.pop(next(iter(self._rows)))
                self._rows[n] = cached
            return cached

    def find(self, case_id: str, iteration: int) -> int | None:
        """The position of a case × iteration among the original rows, then perturbed ones."""
        for n in range(len(self.index)):
            if self.index.case_id[n] == case_id and self.index.iteration[n] == iteration:
                return n
        return None

    def text(self, n: int) -> str:
        """What the table's search looks in: id, question, answer, expected answer."""
        raw = self._raw[n]
        return " ".join(
            str(raw.get(k) or "") for k in ("case_id", "question", "answer", "expected_answer")
        )

    def full(self) -> ReportData:
        """The whole report as one ReportData (compare and leaderboard read every row)."""
        with self._lock:
            if self._full is None:
                rows = [_case_row(self._raw, n) for n in range(len(self._raw))]
                self._full = self.head.model_copy(
                    update={
                        "rows": rows[: self.originals],
                        "perturbed_rows": rows[self.originals :],
                    }
                )
            return self._full


def _case_row(raw: Sequence[dict[str, Any]], n: int) -> CaseRow:
    """Row ``n`` typed; a row that is not a case row (report.json edited, or written by
    something else) is a :class:`StorageError` naming it (the page says so, a 400), not a
    server error."""
    try:
        return CaseRow.model_validate(raw[n])
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise StorageError(
            f"row {n} of this run's report.json is not a case row ({where}: {first['msg']}); "
            "the report was changed after evalrunner wrote it"
        ) from None
