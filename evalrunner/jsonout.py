"""JSON as evalrunner writes it: strict, so every file and output is valid JSON.

Python's ``json.dumps`` writes ``NaN`` and ``Infinity`` by default, which no other JSON
reader accepts (Step Functions, browsers, jq, pandas' strict mode): one non-finite number in
summary.json made the whole file unreadable. Every report, summary, record and output is
written through :func:`dump_json`. Numbers are checked where they enter (event validation,
:func:`evalrunner.targets.base.distrust_numbers`); should a non-finite float still get this
far, it is written as ``null`` with a warning instead of failing the run at its last step.
"""

from __future__ import annotations

import json
import logging
import math
from typing import Any

log = logging.getLogger(__name__)


def finite(value: Any, where: str = "$", found: list[str] | None = None) -> Any:
    """``value`` with every NaN / ±Infinity float replaced by None (paths appended to
    ``found``)."""
    if isinstance(value, float) and not math.isfinite(value):
        if found is not None:
            found.append(where)
        return None
    if isinstance(value, dict):
        return {k: finite(v, f"{where}.{k}", found) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [finite(v, f"{where}[{i}]", found) for i, v in enumerate(value)]
    return value


def dump_json(value: Any, *, indent: int | None = None, ascii_only: bool = False) -> str:
    """Strict JSON text (``allow_nan=False``); compact unless ``indent`` is given."""
    separators = None if indent is not None else (",", ":")
    try:
        return json.dumps(
            value, ensure_ascii=ascii_only, separators=separators, indent=indent, allow_nan=False
        )
    except ValueError:
        found: list[str] = []
        cleaned = finite(value, found=found)
        if not found:
            raise
        log.warning("non-finite numbers written as null: %s", ", ".join(found[:20]))
        return json.dumps(
            cleaned, ensure_ascii=ascii_only, separators=separators, indent=indent, allow_nan=False
        )
