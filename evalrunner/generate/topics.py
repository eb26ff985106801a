"""Topics: chunks grouped by meaning (average-linkage clustering of their embeddings on the
local embedding model, else TF-IDF), each named by its most distinctive words."""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel

from evalrunner.generate.chunks import Chunk
from evalrunner.reports.analysis.clustering import Embed, average_linkage, group_name, tfidf

#: Cosine similarity at which two groups of chunks join one topic.
EMBEDDING_SIMILARITY = 0.35
TFIDF_SIMILARITY = 0.08


class Topic(BaseModel):
    name: str
    chunks: list[Chunk]


def find_topics(chunks: Sequence[Chunk], embed: Embed | None) -> list[Topic]:
    """Topics in order of their first chunk; the same chunks always give the same topics."""
    texts = [f"{c.heading}\n{c.text}" for c in chunks]
    if embed is not None:
        labels = average_linkage(embed(texts), EMBEDDING_SIMILARITY)
    else:
        labels = average_linkage(tfidf(texts), TFIDF_SIMILARITY)
    topics: list[Topic] = []
    names: set[str] = set()
    for label in sorted(set(labels)):
        members = [c for c, g in zip(chunks, labels, strict=True) if g == label]
        inside = [f"{c.heading} {c.text}" for c in members]
        outside = [t for t, g in zip(texts, labels, strict=True) if g != label]
        name = group_name(inside, outside, size=2)
        while name in names:  # two topics never share a name
            name += "'"
        names.add(name)
        topics.append(Topic(name=name, chunks=members))
    return topics
