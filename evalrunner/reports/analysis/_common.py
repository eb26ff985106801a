"""Helpers shared by :mod:`~evalrunner.reports.analysis.problems` and
:mod:`~evalrunner.reports.analysis.insights`: which metrics are primary, which cases fail, how a
reason is grouped, and how case lists and texts are shortened for a description."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from evalrunner.reports.model import CaseRow, MetricInfo, ReportData

#: How many case ids a description or action names inline (affected_cases has them all).
_NAMED = 5


_QUOTED = re.compile(r"'[^']*'|\"[^\"]*\"")
_NUMBER = re.compile(r"(?<![\w-])\d+(?:[.,]\d+)*")  # not the 1 of "f1"
_DETAIL = re.compile(r"[:(;]")


def normalize_reason(reason: str) -> str:
    """The group key of a failure reason: lowercase, quoted text and numbers blanked (not digits
    inside a name such as "F1" or "ROUGE-2"), cut at the first ':', '(' or ';' (what follows
    is usually the case-specific detail)."""
    text = reason.lower()
    text = _QUOTED.sub("…", text)
    text = _NUMBER.sub("#", text)
    text = _DETAIL.split(text, maxsplit=1)[0]
    return " ".join(text.split())[:80] or reason[:80]


def _primary(data: ReportData) -> list[MetricInfo]:
    return [m for m in data.metrics if m.primary]


def _failing_cases(data: ReportData, metric: str) -> list[str]:
    """Cases with a scored iteration that failed ``metric``, in row order."""
    return list(
        dict.fromkeys(
            row.case_id
            for row in data.rows
            if (r := row.result(metric)) is not None and r.status == "scored" and not r.success
        )
    )


def _cases(rows: Iterable[CaseRow]) -> list[str]:
    return list(dict.fromkeys(r.case_id for r in rows))


def _most_common(texts: Iterable[str]) -> tuple[str, int]:
    """The most frequent text by normalised form (an example of it, and its count)."""
    groups: dict[str, list[str]] = {}
    for t in texts:
        groups.setdefault(normalize_reason(t), []).append(t)
    key = max(groups, key=lambda k: len(groups[k]))  # first seen on ties
    return groups[key][0], len(groups[key])


def _names(cases: Sequence[str]) -> str:
    if not cases:
        return "none"
    more = len(cases) - _NAMED
    return ", ".join(cases[:_NAMED]) + (f" and {more} more" if more > 0 else "")


def _clip(text: str, limit: int = 200) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


#: An error message is kept whole up to this many characters: evalrunner's own messages end
#: with their fix, and the excerpts of bodies they quote are already short.
ERROR_CHARS = 2000


def _whole_error(text: str, limit: int = ERROR_CHARS) -> str:
    """An error message on one line and whole, so its fix (which comes last) is never cut
    off; one longer than ``limit`` loses its middle, never its end."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    half = (limit - 40) // 2
    return f"{text[:half]} … ({len(text) - 2 * half} characters left out) … {text[-half:]}"
