"""Looping detection: an answer that repeats itself (a generation loop) instead of ending.

Three views of repetition, all computed on the answer with surrounding whitespace stripped:

``Unique sentences`` (primary; higher is better, threshold 0.75)
    unique / all sentences, counting only sentences of 10+ characters (so "Yes." or "1." do
    not count as repeats). Sentences are split after ``.``, ``!``, ``?`` and ``…`` followed by
    whitespace, and at line breaks; they are compared with case and spacing folded. 0.75
    tolerates one repeated sentence in four (a restated conclusion) but not a loop.

``Longest repeated substring`` (lower is better, threshold 0.5)
    L × f / n, where L is the length of the longest substring occurring at least twice, f the
    number of its non-overlapping occurrences and n the text length, so the score is the share
    of the text covered by copies of that substring (in [0, 1]). A paragraph written twice
    scores about 1; ordinary prose scores under 0.1 (its longest repeats are phrases such as
    " of the annual leave "). Computed with a suffix array (prefix doubling over packed
    8-byte windows, in numpy) and LCPs, O(n log n): about 0.15 ms for a 100-word answer and
    under 20 ms for 20,000 characters, where a quadratic scan takes about 10 s.

``Compression ratio`` (higher is better, threshold 0.3)
    zlib (level 9) compressed bytes / UTF-8 bytes, capped at 1 (very short texts grow under
    compression). English prose measures 0.5–0.65 at 100 words and stays above about 0.35 for
    long texts, while a passage repeated twice drops to about 0.42 and three times to about
    0.29; 0.3 therefore flags real loops without flagging long answers. Highly regular
    non-prose (large JSON arrays, tables) also compresses well and may fall under 0.3: rely
    on the primary metric there.

An empty (or whitespace-only) answer does not loop: unique sentences 1, longest repeated
substring 0, compression ratio 1; the reasons say the answer is empty.
"""

from __future__ import annotations

import re
import zlib
from collections import Counter
from collections.abc import Mapping

import numpy as np

from evalrunner.evaluators.base import Evaluator, Input, MetricSpec, Sample, Scored
from evalrunner.evaluators.registry import register

#: Where this module's evaluators come in the catalog (see evaluators.registry).
CATALOG_POSITION = 60

_UNIQUE = "Unique sentences"
_LRS = "Longest repeated substring"
_COMPRESSION = "Compression ratio"
#: Sentences shorter than this (after folding spaces) are ignored.
MIN_SENTENCE = 10

# Linear on any input: no two adjacent unbounded runs over the same characters.
_SENTENCE_END = re.compile(r"(?<=[.!?…。！？])\s+|\n")
_SHOWN = 60


def _shorten(text: str, limit: int = _SHOWN) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def sentences(text: str) -> list[str]:
    """Sentences of ``text`` (case and spacing folded), ignoring those under 10 characters."""
    out = []
    for part in _SENTENCE_END.split(text):
        folded = " ".join(part.split()).casefold()
        if len(folded) >= MIN_SENTENCE:
            out.append(folded)
    return out


# --- Longest repeated substring -----------------------------------------------------------------


def _dense_rank(key: np.ndarray) -> tuple[np.ndarray, int]:
    """Rank of each key among the distinct keys (0-based, equal keys share one) and the
    highest rank."""
    order = np.argsort(key, kind="stable")  # radix/timsort: faster than quicksort here
    ordered = key[order]
    steps = np.empty(len(key), dtype=np.int64)
    steps[0] = 0
    np.not_equal(ordered[1:], ordered[:-1], out=steps[1:])
    np.cumsum(steps, out=steps)
    rank = np.empty(len(key), dtype=np.int64)
    rank[order] = steps
    return rank, int(steps[-1])


def _symbols(text: str) -> tuple[np.ndarray, int]:
    """One big-endian byte string per character (``width`` bytes each, never 0), then 8
    padding zero bytes; and ``width``.

    Byte order equals character order, and 0 is free to pad past the end, so comparing the
    bytes of two windows compares the windows (a shorter suffix sorts first). One byte a
    character whenever the text has at most 128 distinct non-ASCII characters (the usual
    case: €, curly quotes, dashes), so that 8 characters pack into one sort key.
    """
    pad = np.zeros(8, dtype=np.uint8)
    if "\0" not in text:
        if text.isascii():
            return np.frombuffer(text.encode("ascii") + bytes(8), dtype=np.uint8), 1
        if max(text) <= "\uffff":
            codes = np.frombuffer(text.encode("utf-16-be", "surrogatepass"), dtype=">u2")
            high = codes > 127
            others = np.sort(codes[high])  # few: np.unique's overhead would dominate
            distinct = others[np.concatenate(([True], others[1:] != others[:-1]))]
            if len(distinct) <= 128:  # ASCII keeps its byte; the rest take 128.. in order
                small = codes.astype(np.uint8)
                small[high] = np.searchsorted(distinct, codes[high]) + 128
                return np.concatenate((small, pad)), 1
    points = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
    distinct, inverse = np.unique(points, return_inverse=True)
    inverse = inverse.reshape(-1) + 1  # 0 is the padding
    if len(distinct) < 255:
        return np.concatenate((inverse.astype(np.uint8), pad)), 1
    if len(distinct) < 65535:
        return np.concatenate((inverse.astype(">u2").view(np.uint8), pad)), 2
    return np.concatenate((inverse.astype(">u4").view(np.uint8), pad)), 4


def longest_repeat(text: str) -> tuple[int, list[int]]:
    """Length of the longest substring that occurs at least twice (occurrences may overlap)
    and the sorted start positions of every occurrence of it (the most frequent one when
    several distinct substrings share that length). ``(0, [])`` when nothing repeats."""
    n = len(text)
    if n < 2:
        return 0, []
    padded, width = _symbols(text)
    # Every window of 8 bytes (8 // width characters) as one uint64: the first sort key.
    windows = np.ndarray((n, 8), dtype=np.uint8, buffer=padded, strides=(width, 1)).copy()
    k = 8 // width
    rank, top = _dense_rank(windows.view(">u8").reshape(-1).astype(np.uint64))
    levels = [(k, rank)]  # (window length, rank of each window of that length)
    while k < n and top < n - 1:
        second = np.zeros(n, dtype=np.int64)
        second[: n - k] = rank[k:] + 1
        rank, top = _dense_rank(rank * (n + 1) + second)
        k *= 2
        levels.append((k, rank))
    suffixes = np.empty(n, dtype=np.int64)
    suffixes[rank] = np.arange(n)  # ranks are distinct now: rank -> position

    # LCP of neighbours in suffix order: greedy over window lengths (longest first), each
    # step adding a length when both windows are whole and equal, then the last < 8 bytes.
    a, b = suffixes[:-1], suffixes[1:]
    lcp = np.zeros(n - 1, dtype=np.int64)
    for size, ranks in reversed(levels):
        ia, ib = a + lcp, b + lcp
        same = (ib + size <= n) & (ia + size <= n)
        same &= ranks[np.minimum(ia, n - 1)] == ranks[np.minimum(ib, n - 1)]
        lcp += same * size
    ia, ib = np.minimum(a + lcp, n - 1), np.minimum(b + lcp, n - 1)
    # First differing byte. Two valid windows always differ (one would have to end in the
    # same padding, i.e. be the same position); clamped ones are capped to 0 just below.
    first = (windows[ia] != windows[ib]).argmax(axis=1)
    lcp += np.minimum(first // width, n - np.maximum(a, b) - lcp)

    longest = int(lcp.max())
    if longest == 0:
        return 0, []
    at = np.flatnonzero(lcp == longest)
    if len(at) == 1:  # the usual case: one pair of occurrences
        first_t, last_t = int(at[0]), int(at[0])
    else:  # runs of neighbours t..t+m share one substring: m + 2 occurrences; take the longest
        runs = np.split(at, np.flatnonzero(np.diff(at) != 1) + 1)
        best = max(runs[:200], key=len)
        first_t, last_t = int(best[0]), int(best[-1])
    positions = sorted(int(p) for p in suffixes[first_t : last_t + 2])
    return longest, positions


def _non_overlapping(positions: list[int], length: int) -> int:
    count, end = 0, -1
    for p in positions:
        if p >= end:
            count, end = count + 1, p + length
    return count


# --- The evaluator ------------------------------------------------------------------------------


@register
class LoopingDetection(Evaluator):
    """Repetition in the answer, the mark of a model stuck in a loop: three views (unique
    sentences, the longest repeated substring, how well the answer compresses), no model.
    A loop this short still passes the compression threshold; the other two views catch it.

    >>> answer = "I can help with that. " * 3 + "I can help with that."
    >>> for r in LoopingDetection().evaluate(Sample(question="Can you help?", answer=answer)):
    ...     print(f"{r.metric}: {r.score:.2f} {r.success}")
    Unique sentences: 0.25 False
    Longest repeated substring: 0.75 False
    Compression ratio: 0.38 True
    """

    name = "Looping detection"
    aliases = ("Looping",)
    description = (
        "Repetition in the answer: unique sentences, longest repeated substring and zlib "
        "compression ratio."
    )
    inputs = frozenset({Input.ANSWER})
    metrics = (
        MetricSpec(_UNIQUE, "unique / all sentences of 10+ characters", primary=True),
        MetricSpec(
            _LRS,
            "length × non-overlapping occurrences / text length of the longest repeated substring",
            higher_is_better=False,
            threshold=0.5,
        ),
        MetricSpec(_COMPRESSION, "zlib level 9 bytes / UTF-8 bytes (capped at 1)", threshold=0.3),
    )

    def score(self, sample: Sample) -> Mapping[str, Scored]:
        assert sample.answer is not None
        text = sample.answer.strip()
        if not text:
            why = "the answer is empty: nothing repeats"
            return {
                _UNIQUE: Scored(1.0, why),
                _LRS: Scored(0.0, why),
                _COMPRESSION: Scored(1.0, why),
            }
        return {
            _UNIQUE: self._unique(text),
            _LRS: self._lrs(text),
            _COMPRESSION: self._compression(text),
        }

    def _unique(self, text: str) -> Scored:
        found = sentences(text)
        if not found:
            return Scored(1.0, f"no sentence of {MIN_SENTENCE}+ characters: nothing repeats")
        counts = Counter(found)
        value = len(counts) / len(found)
        why = f"{len(counts)} unique of {len(found)} sentences"
        sentence, times = counts.most_common(1)[0]
        if times > 1:
            why += f'; "{_shorten(sentence)}" appears {times} times'
        return Scored(value, why)

    def _lrs(self, text: str) -> Scored:
        length, positions = longest_repeat(text)
        if length == 0:
            return Scored(0.0, "no substring repeats")
        count = _non_overlapping(positions, length)
        value = length * count / len(text)
        start = positions[0]
        overlap = f" ({len(positions)} overlapping)" if len(positions) != count else ""
        return Scored(
            value,
            f"{length} characters × {count} occurrences{overlap} / {len(text)} characters: "
            f'"{_shorten(text[start : start + length])}"',
        )

    def _compression(self, text: str) -> Scored:
        raw = text.encode("utf-8", "surrogatepass")  # a lone surrogate must not crash
        packed = len(zlib.compress(raw, 9))
        value = min(1.0, packed / len(raw))
        capped = " (capped at 1: short texts grow when compressed)" if packed > len(raw) else ""
        return Scored(value, f"{len(raw)} bytes compress to {packed}{capped}")
