"""What a detector reports (:class:`Finding`), how values are masked for reasons, and how
overlapping candidates of different kinds are resolved to one finding."""

from __future__ import annotations

import bisect
from dataclasses import dataclass

__all__ = ["Candidate", "Finding", "mask_keep_last", "mask_token", "resolve_overlaps"]


@dataclass(frozen=True, slots=True)
class Finding:
    """One detected value: ``kind`` (see PII_KINDS / SECRET_KINDS), a masked form for
    reasons, and its ``[start, end)`` span in the scanned text."""

    kind: str
    text_redacted: str
    start: int
    end: int

    def __str__(self) -> str:
        return f"{self.kind} {self.text_redacted}"


#: What a detector yields before overlaps are resolved: start, end, kind, redacted form.
Candidate = tuple[int, int, str, str]


def mask_keep_last(value: str, keep: int) -> str:
    """Mask every alphanumeric character but the last ``keep``; separators stay."""
    total = sum(ch.isalnum() for ch in value)
    out, seen = [], 0
    for ch in value:
        if ch.isalnum():
            seen += 1
            out.append(ch if seen > total - keep else "*")
        else:
            out.append(ch)
    return "".join(out)


def mask_token(value: str, prefix_len: int) -> str:
    """A token as its known prefix, then only its length: ``ghp_…(40 chars)``."""
    return f"{value[:prefix_len]}…({len(value)} chars)"


def resolve_overlaps(candidates: list[Candidate], rank: dict[str, int]) -> list[Finding]:
    """Findings in order of position; where candidates overlap, the kind ranked first wins,
    then the longest."""
    if not candidates:
        return []
    candidates.sort(key=lambda c: (rank[c[2]], c[0] - c[1], c[0]))
    starts: list[int] = []  # kept spans never overlap, so their starts and ends sort alike
    kept: list[Candidate] = []
    for c in candidates:
        i = bisect.bisect_right(starts, c[0])
        if i and kept[i - 1][1] > c[0]:
            continue  # overlaps the kept span that starts at or before it
        if i < len(kept) and kept[i][0] < c[1]:
            continue  # overlaps the kept span that starts after it
        starts.insert(i, c[0])
        kept.insert(i, c)
    return [Finding(kind, redacted, start, end) for start, end, kind, redacted in kept]
