"""What the judge RAG metrics share: skip reasons, quoting in reasons, the case's non-blank
chunks, the formulas and the lexical similarity stand-in.
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Callable, Sequence
from functools import lru_cache

from evalrunner.evaluators.base import (
    Sample,
    SkipCase,
)
from evalrunner.evaluators.rouge import porter_stemmer
from evalrunner.judge.extract import (
    StatementCheck,
    Verdict,
)

BLANK_CONTEXT = "the retrieved context chunks are all blank"
NO_EA_STATEMENTS = "no statements could be extracted from the expected answer"
N_QUESTIONS = 3
_QUOTE = 160


def _q(text: str) -> str:
    """A statement or reason quoted in a reason, shortened."""
    text = " ".join(text.split())
    return '"' + (text if len(text) <= _QUOTE else text[: _QUOTE - 1] + "…") + '"'


def _because_text(reason: str) -> str:
    return f" ({reason.strip()})" if reason.strip() else ""


def _because(v: Verdict | StatementCheck) -> str:
    return _because_text(v.reason)


def _chunks(sample: Sample) -> list[str]:
    chunks = [c for c in sample.contexts if c.strip()]
    if not chunks:
        raise SkipCase(BLANK_CONTEXT)
    return chunks


# --- formulas ----------------------------------------------------------------------------------


def weighted_precision(relevance: Sequence[bool]) -> float:
    """(1 / #relevant) · Σ_k (relevant up to k / k) · r_k; 0 when nothing is relevant."""
    hits, total = 0, 0.0
    for k, relevant in enumerate(relevance, start=1):
        if relevant:
            hits += 1
            total += hits / k
    return total / hits if hits else 0.0


def factuality_f1(tp: int, fp: int, fn: int) -> float:
    """TP / (TP + 0.5 · (FP + FN)); 0 when there is nothing at all."""
    denominator = tp + 0.5 * (fp + fn)
    return tp / denominator if denominator else 0.0


def harmonic_mean(values: Sequence[float]) -> float:
    """Harmonic mean; 0 as soon as one value is 0."""
    return 0.0 if any(v <= 0 for v in values) else statistics.harmonic_mean(values)


_WORD = re.compile(r"\w+", re.UNICODE)
_STOPWORDS = frozenset(
    "a an the is are was were be been being am do does did done has have had of in on at to "
    "for from by with about as into and or but if then than so that this these those it its "
    "what which who whom whose when where why how can could should would will shall may might "
    "must i you he she we they me him her us them my your his our their there here please "
    "tell me".split()
)


@lru_cache(maxsize=4096)
def _content_tokens(text: str) -> tuple[str, ...]:
    words = _WORD.findall(text.casefold())
    content = [w for w in words if w not in _STOPWORDS] or words
    stem = porter_stemmer().stem  # nltk imported on first use (evaluators.rouge)
    return tuple(stem(w) for w in content)


#: S(a, b) in [0, 1]: :func:`lexical_similarity` or the cosine of embeddings.
Similarity = Callable[[str, str], float]


def lexical_similarity(a: str, b: str) -> float:
    """ROUGE-L F1 over stemmed content words (stopwords dropped unless nothing else is left):
    the stand-in for embedding cosine similarity where the run has no embedding model."""
    x, y = _content_tokens(a), _content_tokens(b)
    if not x or not y:
        return 0.0
    previous = [0] * (len(y) + 1)
    for token in x:
        current = [0]
        for j, other in enumerate(y, start=1):
            current.append(
                previous[j - 1] + 1 if token == other else max(previous[j], current[j - 1])
            )
        previous = current
    lcs = previous[-1]
    if lcs == 0:
        return 0.0
    precision, recall = lcs / len(x), lcs / len(y)
    return 2 * precision * recall / (precision + recall)


def stand_in_note(why: str) -> str:
    """What a reason says when the similarity part is the ROUGE-L stand-in, and why."""
    return f"similarity: ROUGE-L stand-in ({why})"


def embeddings_note(model: str) -> str:
    """What a reason says when the similarity part is the cosine of ``model``'s embeddings."""
    return f"similarity: embeddings ({model})"


#: The per-case reason's note: the Score step replaces the result, with embeddings or with
#: the stand-in and the reason no model was there; this note stays only if it never ran.
PENDING_NOTE = stand_in_note("not yet rescored with embeddings in the Score step")
