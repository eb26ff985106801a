"""What changed between two runs, case by case, for the compare page: each changed answer as
a word diff (difflib), with the case's score changes; the cases that regressed first."""

from __future__ import annotations

import difflib
from typing import Any

from evalrunner.reports.model import ReportData


def _diff(before: str, after: str) -> list[tuple[str, str]]:
    """Word-level diff as (op, text): op is "=", "-" or "+"."""
    a, b = before.split(), after.split()
    out: list[tuple[str, str]] = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        if op == "equal":
            out.append(("=", " ".join(a[i1:i2])))
            continue
        if i2 > i1:
            out.append(("-", " ".join(a[i1:i2])))
        if j2 > j1:
            out.append(("+", " ".join(b[j1:j2])))
    return out


#: Cases listed with their answer diff on the compare page (regressions first).
COMPARE_CASES = 100


def answer_changes(
    base: ReportData, current: ReportData, regressed: set[str]
) -> list[dict[str, Any]]:
    before = {(r.case_id, r.iteration): r for r in [*base.rows, *base.perturbed_rows]}
    out: list[dict[str, Any]] = []
    for row in [*current.rows, *current.perturbed_rows]:
        old = before.get((row.case_id, row.iteration))
        if old is None or (old.answer or "") == (row.answer or ""):
            continue
        deltas = []
        for result in row.results:
            previous = old.result(result.metric)
            if result.score is not None and previous is not None and previous.score is not None:
                deltas.append((result.metric, result.score - previous.score))
        out.append(
            {
                "row": row,
                "regressed": row.case_id in regressed,
                "diff": _diff(old.answer or "", row.answer or ""),
                "deltas": sorted(deltas, key=lambda d: d[1])[:6],
            }
        )
    out.sort(key=lambda c: (not c["regressed"], c["row"].case_id, c["row"].iteration))
    return out[:COMPARE_CASES]
