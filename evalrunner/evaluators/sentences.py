"""Sentences of a text, for the sentence-level model metrics.

sentencex (Wikimedia's splitter) knows abbreviations, decimals and quotes in many languages
and needs no data download, so the split is the same on a laptop, in a Lambda and in the GPU
image, and no run fails for want of a punkt file.
"""

from __future__ import annotations

from functools import lru_cache

#: A pathological answer (one "sentence" per character) must not blow up the pairwise work.
MAX_SENTENCES = 200


@lru_cache(maxsize=65536)
def _split(text: str, language: str) -> tuple[str, ...]:
    from sentencex import segment

    parts = (s.strip() for s in segment(language, text))
    return tuple(s for s in parts if any(ch.isalnum() for ch in s))[:MAX_SENTENCES]


def split_sentences(text: str | None, language: str = "en") -> list[str]:
    """Non-empty sentences of ``text`` in order (punctuation-only fragments dropped)."""
    if not text or not text.strip():
        return []
    return list(_split(text, language))
