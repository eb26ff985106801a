"""Run-level figures (an evaluator's whole-run summary: a confusion matrix, per-label
tables, key figures) and the run's configuration, as report.html shows them.

A summary is free-form JSON from an evaluator; it is laid out by shape: scalars as a key/value
list, ``confusion_matrix`` as a coloured matrix, a dict of flat dicts as a table, anything else
as indented JSON (cut by the template). Values stay the run's text: the template escapes them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from evalrunner.reports.views import palette
from evalrunner.reports.views.formatting import score, short


def is_scalar(value: Any) -> bool:
    return value is None or isinstance(value, str | int | float | bool)


def scalar_text(value: Any) -> str:
    """A scalar of a summary or the configuration as text (strings as they are)."""
    if isinstance(value, bool) or value is None:
        return json.dumps(value)
    if isinstance(value, float):
        return score(value)
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


def json_text(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, default=str, sort_keys=False)


@dataclass(frozen=True)
class MatrixCell:
    value: Any
    style: str  # background colour, "" for an empty cell
    cls: str


@dataclass(frozen=True)
class Block:
    """One piece of a run-level figure: ``kind`` is kv, matrix, table, list or json."""

    kind: str
    title: str = ""
    items: list[tuple[str, Any]] = field(default_factory=list)  # kv; list: one (key, text)
    columns: list[str] = field(default_factory=list)  # matrix, table
    rows: list[tuple[str, list[Any]]] = field(default_factory=list)  # matrix, table
    text: str = ""  # json


def _matrix(matrix: dict[str, Any]) -> Block:
    expected = list(matrix)[:30]
    predicted: list[str] = []
    for e in expected:
        for p in matrix[e] if isinstance(matrix[e], dict) else {}:
            if p not in predicted:
                predicted.append(p)
    predicted = predicted[:30]
    peak = max(
        [v for e in expected for v in matrix[e].values() if isinstance(v, int | float)] + [1]
    )
    rows = []
    for e in expected:
        cells = []
        for p in predicted:
            v = matrix[e].get(p, 0)
            n = v if isinstance(v, int | float) else 0
            alpha = 0.12 + 0.78 * n / peak if n else 0
            r, g, b = palette.rgb(palette.PASS if e == p else palette.FAIL)
            style = f"background:rgba({r},{g},{b},{alpha:.2f})" if n else ""
            cls = "num" + (" strong" if alpha > 0.5 else "") + (" light" if alpha > 0.55 else "")
            cells.append(MatrixCell(v, style, cls))
        rows.append((short(str(e), 24), cells))
    return Block("matrix", "Confusion matrix", columns=[short(str(p), 24) for p in predicted],
                 rows=rows)  # fmt: skip


def summary_blocks(summary: Any) -> list[Block]:
    """A run-level figure (an evaluator's summary) as key/value lists, tables and JSON."""
    if not isinstance(summary, dict):
        return [Block("json", text=json_text(summary))]
    scalars = [(k, v) for k, v in summary.items() if is_scalar(v)]
    blocks = [Block("kv", items=scalars[:60])] if scalars else []
    for k, v in summary.items():
        if is_scalar(v):
            continue
        if (
            k == "confusion_matrix"
            and isinstance(v, dict)
            and all(isinstance(x, dict) for x in v.values())
        ):
            blocks.append(_matrix(v))
        elif (
            isinstance(v, dict)
            and v
            and all(
                isinstance(x, dict) and all(is_scalar(y) for y in x.values()) for x in v.values()
            )
        ):
            cols: list[str] = []
            for x in v.values():
                cols += [c for c in x if c not in cols]
            rows = [
                (short(str(name), 40), [x.get(c) for c in cols]) for name, x in list(v.items())[:50]
            ]
            blocks.append(Block("table", k.replace("_", " "), columns=cols, rows=rows))
        elif isinstance(v, dict) and v and all(is_scalar(x) for x in v.values()):
            blocks.append(Block("kv", k.replace("_", " "), items=list(v.items())[:60]))
        elif isinstance(v, list) and all(is_scalar(x) for x in v):
            shown = ", ".join("" if x is None else str(x) for x in v[:60]) + (
                " …" if len(v) > 60 else ""
            )
            blocks.append(Block("list", items=[(k, shown)]))
        else:
            blocks.append(Block("json", k, text=json_text(v)))
    return blocks


def config_value(value: Any) -> tuple[str, Any]:
    """(kind, value): scalar, code (compact JSON) or json (a folded block)."""
    if is_scalar(value):
        return "scalar", value
    compact = json.dumps(value, ensure_ascii=False, default=str)
    if len(compact) <= 90:
        return "code", compact
    return "json", json_text(value)
