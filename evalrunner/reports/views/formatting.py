"""How the HTML reports write numbers, durations and shortened labels.

Plain functions returning plain (unescaped) text: the templates use them as filters and
escape their output like any other text, so none of them may return markup.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import datetime
from typing import Any


def score(x: Any) -> str:
    """A score or any number, short; "—" for nothing (or for what is not a number)."""
    try:
        x = float(x)
    except (TypeError, ValueError):
        return "—"
    if not math.isfinite(x):
        return "—"
    if abs(x) >= 100:
        return f"{x:,.0f}"
    if abs(x) >= 10:
        return f"{x:.1f}"
    return f"{x:.3f}".rstrip("0").rstrip(".") if x != 0 else "0"


def pct(x: float | None) -> str:
    """A share as a percentage: whole when it is, else one decimal."""
    if x is None or not math.isfinite(x):
        return "—"
    v = x * 100
    return f"{v:.0f}%" if abs(v - round(v)) < 0.05 else f"{v:.1f}%"


def ms(x: float | None) -> str:
    """A latency: milliseconds below a second, seconds above."""
    if x is None or not math.isfinite(x):
        return "—"
    return f"{x / 1000:.2f} s" if x >= 1000 else f"{x:.0f} ms"


def count(x: float | None) -> str:
    """A whole number with thousands separators."""
    return "—" if x is None else f"{int(x):,}"


def money(x: float | None) -> str:
    """Dollars: cents above 100, four decimals below (per-call costs are small)."""
    if x is None or not math.isfinite(x):
        return "—"
    return f"${x:,.2f}" if x >= 100 else f"${x:,.4f}"


def signed(x: float | None) -> str:
    """A delta with its sign (a true minus sign, ± for zero)."""
    if x is None or not math.isfinite(x):
        return "—"
    return ("+" if x > 0 else "−" if x < 0 else "±") + score(abs(x))


def sort_value(x: float | None) -> str:
    """A number for the ``data-v`` sort key of a table cell ("" for nothing)."""
    return "" if x is None else f"{x:.6g}"


def plural(n: int, word: str, many: str | None = None) -> str:
    """``n`` and the word, in the plural unless ``n`` is 1."""
    return f"{n:,} {word if n == 1 else (many or word + 's')}"


def short(value: str, width: int) -> str:
    """Text with its whitespace collapsed, shortened to ``width`` characters with an ellipsis."""
    value = " ".join(value.split())
    return value if len(value) <= width else value[: max(1, width - 1)] + "…"


def chars(px: float, size: float = 12) -> int:
    """How many characters of a label fit in ``px`` at font size ``size`` (an estimate)."""
    return max(3, int(px / (size * 0.58)))


def coord(x: float) -> str:
    """An SVG coordinate: one decimal, none when it is whole."""
    text = f"{x:.1f}"
    return text[:-2] if text.endswith(".0") else text


def comparator(higher_is_better: bool) -> str:
    """The sign a score must stand in to its threshold to pass."""
    return "≥" if higher_is_better else "≤"


def arrow(higher_is_better: bool) -> str:
    """↑ when higher is better, ↓ when lower is."""
    return "↑" if higher_is_better else "↓"


def duration(start: str, end: str) -> str | None:
    """The time between two ISO timestamps, coarse; None when either is not a time."""
    try:
        seconds = (datetime.fromisoformat(end) - datetime.fromisoformat(start)).total_seconds()
    except (TypeError, ValueError):
        return None
    if seconds < 0:
        return None
    if seconds < 60:
        return f"{seconds:.0f} s"
    if seconds < 3600:
        return f"{seconds // 60:.0f} min {seconds % 60:.0f} s"
    return f"{seconds // 3600:.0f} h {seconds % 3600 // 60:.0f} min"


def percentile(values: Sequence[float], q: float) -> float | None:
    """Linear-interpolated percentile (``q`` in 0..1); None for no values."""
    if not values:
        return None
    ordered = sorted(values)
    pos = q * (len(ordered) - 1)
    lo, hi = math.floor(pos), math.ceil(pos)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


#: The filters the report templates call by name.
FILTERS = {
    "score": score,
    "pct": pct,
    "ms": ms,
    "count": count,
    "money": money,
    "signed": signed,
    "dv": sort_value,
    "plural": plural,
    "short": short,
    "coord": coord,
    "cmp": comparator,
    "arrow": arrow,
}
