"""Deterministic grouping of short texts (questions): vectors, average-linkage clustering on
cosine similarity, and a name for each group from its most distinctive words.

Written with numpy alone, on purpose: Aggregate runs in a Lambda whose layer carries numpy but
not scikit-learn or scipy (hundreds of MB the 250 MB limit cannot hold), and the grouping of a
run's failing questions is small (it is capped at :data:`MAX_TEXTS`). Vectors come from the
packaged MiniLM when the models extra is installed; otherwise from TF-IDF, and the result says
which was used.
"""

from __future__ import annotations

import math
import re
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence

import numpy as np

#: Above this many texts, only the first are grouped (average linkage is quadratic in memory).
MAX_TEXTS = 1000
_WORD = re.compile(r"[^\W\d_][\w'-]*", re.UNICODE)
#: Function words that name no topic (a name is built from what is left).
_STOP = frozenset(
    """a about above after again against all am an and any are as at be because been before
    being below between both but by can could did do does doing down during each few for from
    further had has have having he her here hers him his how i if in into is it its itself
    just me more most my no nor not now of off on once only or other our out over own same she
    should so some such than that the their them then there these they this those through to
    too under until up very was we were what when where which while who whom why will with
    would you your yours get got much many i'm can't don't does""".split()
)

Embed = Callable[[Sequence[str]], np.ndarray]


def words(text: str) -> list[str]:
    return [w for w in (m.group(0).lower() for m in _WORD.finditer(text)) if w not in _STOP]


def tfidf(texts: Sequence[str]) -> np.ndarray:
    """Rows of L2-normalised TF-IDF (smooth idf, as scikit-learn's default) over the texts'
    own vocabulary, in sorted word order (deterministic)."""
    docs = [Counter(words(t)) for t in texts]
    vocab = sorted({w for d in docs for w in d})
    if not vocab:
        return np.zeros((len(texts), 1))
    index = {w: i for i, w in enumerate(vocab)}
    counts = np.zeros((len(texts), len(vocab)))
    for r, doc in enumerate(docs):
        for w, c in doc.items():
            counts[r, index[w]] = c
    df = (counts > 0).sum(axis=0)
    idf = np.log((1 + len(texts)) / (1 + df)) + 1
    return normalise(counts * idf)


def normalise(vectors: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return np.asarray(vectors / np.where(norms == 0, 1, norms), dtype=float)


def average_linkage(vectors: np.ndarray, min_similarity: float) -> list[int]:
    """Cluster labels (0, 1, ... in order of first member): merge the two clusters of highest
    mean pairwise cosine similarity while it is at least ``min_similarity``. Ties go to the
    lowest indices, so the same vectors always give the same groups.

    Each row keeps its best similarity and the first column holding it, so a merge looks at
    one row and the rows whose best it touched instead of the whole matrix (which made the
    clustering of 1,000 questions cubic: a second of an Aggregate). A dead cluster's row and
    column hold -inf. The pick is the one the whole matrix's first maximum gives (lowest row,
    then lowest column)."""
    n = len(vectors)
    if n == 0:
        return []
    unit = normalise(vectors)
    sim = unit @ unit.T
    sizes = np.ones(n)
    alive = np.ones(n, dtype=bool)
    members: list[list[int]] = [[i] for i in range(n)]
    np.fill_diagonal(sim, -np.inf)
    best_col = sim.argmax(axis=1)
    best = sim[np.arange(n), best_col]
    for _ in range(n - 1):
        a = int(np.argmax(best))  # first maximum: the lowest row ...
        b = int(best_col[a])  # ... and its lowest column; b > a, as sim is symmetric
        if not best[a] >= min_similarity:
            break
        # Lance-Williams update for average linkage
        merged = (sim[a] * sizes[a] + sim[b] * sizes[b]) / (sizes[a] + sizes[b])
        sim[a, :], sim[:, a] = merged, merged
        sim[a, a] = -np.inf
        sim[b, :], sim[:, b] = -np.inf, -np.inf
        sizes[a] += sizes[b]
        alive[b] = False
        members[a] += members[b]
        best[b] = -np.inf
        # Live rows whose best was b, or a whose value fell, look again (a whose value held
        # or rose is still the first best: no other column of the row changed); the others
        # can only gain column a.
        stale = alive & ((best_col == b) | ((best_col == a) & (merged < best)))
        stale[a] = True
        gains = alive & ~stale & ((merged > best) | ((merged == best) & (best_col > a)))
        best_col[gains], best[gains] = a, merged[gains]
        rows = np.flatnonzero(stale)
        if rows.size:
            best_col[rows] = sim[rows].argmax(axis=1)
            best[rows] = sim[rows, best_col[rows]]
    labels = [0] * n
    ordered = sorted((sorted(members[i]) for i in range(n) if alive[i]), key=lambda m: m[0])
    for label, group in enumerate(ordered):
        for i in group:
            labels[i] = label
    return labels


def group_name(group: Sequence[str], others: Sequence[str], size: int = 3) -> str:
    """The group's most distinctive words: frequent in the group, rare outside it
    (document frequency in the group × log inverse frequency in the whole set)."""
    inside = Counter(w for t in group for w in set(words(t)))
    everywhere = Counter(w for t in [*group, *others] for w in set(words(t)))
    return _name(inside, len(group), everywhere, len(group) + len(others), size)


def group_names(texts: Sequence[str], labels: Sequence[int], size: int = 3) -> dict[int, str]:
    """Each group's :func:`group_name` against the other texts, by label. Each text's words
    are found once, not once per group (naming 180 groups of 1,000 questions one by one was
    a second of an Aggregate)."""
    sets = [set(words(t)) for t in texts]
    everywhere = Counter(w for s in sets for w in s)
    inside: dict[int, Counter[str]] = defaultdict(Counter)
    for found, label in zip(sets, labels, strict=True):
        inside[label].update(found)
    counts = Counter(labels)
    return {g: _name(inside[g], counts[g], everywhere, len(texts), size) for g in sorted(counts)}


def _name(inside: Counter[str], count: int, everywhere: Counter[str], total: int, size: int) -> str:
    ranked = sorted(
        inside,
        key=lambda w: (-(inside[w] / count) * math.log(1 + total / everywhere[w]), w),
    )
    return " · ".join(ranked[:size]) or "(no words)"
