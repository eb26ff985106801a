"""The reports' colours, defined once: the charts (drawn in Python) take them from here and
the stylesheet's custom properties (``--pass``, ``--fail``, ...) are written from
:data:`CSS_VARIABLES`, so a colour changed here changes everywhere.

Okabe–Ito, a palette that stays distinct under the common colour-vision deficiencies; pass /
fail are blue / vermillion (never red / green), and every colour has a text label.
"""

from __future__ import annotations

import itertools

PASS = "#0072B2"
FAIL = "#D55E00"
ERROR = "#CC79A7"
SKIP = "#D4D4D8"
WARN = "#E69F00"
GOOD = "#007A5E"
MUTED = "#6B7280"
INK = "#1F2937"
GRID = "#E5E7EB"
#: Lighter pass / fail: the targets that are not the best on a leaderboard metric.
PASS_LIGHT = "#56B4E9"
FAIL_LIGHT = "#F0A66E"
#: Empty bar behind a stacked bar, and the score track of the metric chart.
TRACK = "#F3F4F6"
TRACK_LINE = "#D1D5DB"
#: Middle of the pass-share ramp (0 → vermillion, 0.5 → this, 1 → blue).
NEUTRAL = "#F4F1EA"
PAGE = "#F6F7F9"
CARD = "#FFFFFF"

#: Custom properties of the stylesheet, by name (without the leading ``--``).
CSS_VARIABLES = {
    "ink": INK,
    "muted": MUTED,
    "line": GRID,
    "bg": PAGE,
    "card": CARD,
    "pass": PASS,
    "fail": FAIL,
    "warn": WARN,
    "good": GOOD,
    "err": ERROR,
    "pass-light": PASS_LIGHT,
}


def rgb(colour: str) -> tuple[int, int, int]:
    """``#RRGGBB`` -> (r, g, b)."""
    value = colour.lstrip("#")
    return int(value[0:2], 16), int(value[2:4], 16), int(value[4:6], 16)


_SHARE_STOPS = ((0.0, rgb(FAIL)), (0.5, rgb(NEUTRAL)), (1.0, rgb(PASS)))


def share_colour(share: float) -> str:
    """Fill of a heatmap cell: vermillion (0) through a light neutral (0.5) to blue (1)."""
    share = min(1.0, max(0.0, share))
    for (a, ca), (b, cb) in itertools.pairwise(_SHARE_STOPS):
        if share <= b:
            t = (share - a) / (b - a)
            r, g, bl = (round(x + (y - x) * t) for x, y in zip(ca, cb, strict=True))
            return f"#{r:02x}{g:02x}{bl:02x}"
    return PASS.lower()


def text_on_share(share: float) -> str:
    """Text colour readable on :func:`share_colour`."""
    return "#ffffff" if abs(share - 0.5) > 0.3 else INK
