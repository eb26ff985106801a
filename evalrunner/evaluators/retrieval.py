"""Retrieval checks without a model: ranks of the expected documents, and expected chunks found.

``Retrieval rank`` compares the case's ``expected_documents`` with the document ids or URIs the
target reported, in rank order (``documents``):

* Matching: both sides are trimmed and compared case-insensitively. With ``match: basename``
  (the default) only the last path segment counts, so ``s3://bucket/docs/leave.md``,
  ``https://host/docs/leave.md?v=2#top``, ``C:\\docs\\leave.md`` and ``leave.md`` are one
  document (percent-escapes decoded, query and fragment dropped). ``match: exact`` compares the
  whole trimmed, case-folded string.
* Ranks count distinct documents: a document reported again (several chunks of one file)
  keeps the rank of its first appearance and later repeats are dropped, so repeats neither
  push other documents down nor count twice.
* ``Reciprocal rank`` (primary, threshold 0.5) = 1 / rank of the first expected document,
  0 when none is within the first ``k_max`` (10) documents.
* ``Hit@k`` (pass/fail) = 1 when an expected document is within the first ``k`` (3).
* ``Document recall@k`` (threshold 0.75) = distinct expected documents within the first ``k``
  / distinct expected documents.
* A case without expected documents is skipped; a target that reported none scores 0 on all
  three. The run summary is ``{"mrr", "hit_rate@k", "document_recall@k", "k", "k_max",
  "cases"}``, the means over the scored cases.

``Chunk match`` is the share of the case's ``expected_contexts`` found in the retrieved chunks
(``contexts``). Texts are compared after case folding and collapsing whitespace; an expected
passage E is found in a retrieved chunk C when any of these holds:

1. E is contained in C;
2. C is contained in E and is at least half as long as E (the retriever cut the passage
   differently; a short chunk such as a heading does not count);
3. at least 80 % of E's word tokens (with multiplicity) occur in C (the same passage with
   other punctuation, formatting or a few edits).

Expected passages that are equal after normalisation count once. Threshold 0.75, primary.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any, Literal
from urllib.parse import unquote, urlsplit

from pydantic import BaseModel, ConfigDict, Field

from evalrunner.evaluators.base import (
    Evaluator,
    Input,
    MetricResult,
    MetricSpec,
    Sample,
    Scored,
    SkipCase,
)
from evalrunner.evaluators.registry import register

#: Where this module's evaluators come in the catalog (see evaluators.registry).
CATALOG_POSITION = 90

NO_DOCUMENTS = "the target reported no retrieved documents"


class RetrievalOptions(BaseModel):
    """Run-wide settings of ``Retrieval rank`` (``evaluator_options``)."""

    model_config = ConfigDict(extra="forbid")

    #: Cut-off of Hit@k and Document recall@k.
    k: int = Field(3, ge=1)
    #: Documents beyond this rank give a reciprocal rank of 0.
    k_max: int = Field(10, ge=1)
    #: "basename": compare the last path segment of ids, paths and URIs; "exact": whole ids.
    match: Literal["basename", "exact"] = "basename"


def document_key(document: str, match: Literal["basename", "exact"] = "basename") -> str:
    """The form in which two document ids are compared (see the module docstring)."""
    text = document.strip()
    if match == "exact":
        return text.casefold()
    if "://" in text:
        parts = urlsplit(text)
        text = parts.path if parts.path.strip("/") else parts.netloc
    else:
        text = text.split("?", 1)[0].split("#", 1)[0]
    segments = [s for s in re.split(r"[/\\]", unquote(text)) if s.strip()]
    return segments[-1].strip().casefold() if segments else text.casefold()


def _unique(items: Sequence[str], match: Literal["basename", "exact"]) -> list[tuple[str, str]]:
    """(key, first spelling) of each distinct non-blank item, in order."""
    seen: dict[str, str] = {}
    for item in items:
        if item and item.strip():
            seen.setdefault(document_key(item, match), item.strip())
    return list(seen.items())


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


@register
class RetrievalRank(Evaluator[RetrievalOptions]):
    """Where the expected documents came among those the target retrieved: reciprocal rank,
    hit@k and recall@k, the standard retrieval measures, with no model (documents compared by
    basename by default, so a bucket prefix does not make a miss).

    >>> sample = Sample(question="How do I reset my password?",
    ...                 documents=["docs/billing.md", "docs/password-reset.md"],
    ...                 expected_documents=["password-reset.md"])
    >>> for r in RetrievalRank().evaluate(sample):
    ...     print(f"{r.metric}: {r.score:.2f} - {r.reason}")
    Reciprocal rank: 0.50 - first expected document 'password-reset.md' at rank 2: 1/2
    Hit@k: 1.00 - 'password-reset.md' within the first 3
    Document recall@k: 1.00 - 1 of 1 expected documents within the first 3
    """

    name = "Retrieval rank"
    aliases = ("Retrieval ranks", "Reciprocal rank", "reciprocal_rank_score")
    description = (
        "Reciprocal rank, hit@k and recall@k of the expected documents among the documents "
        "the target retrieved (ids, paths or URIs; basenames compared by default)."
    )
    # The expected documents are not an ``Input``: their absence is checked in ``score``.
    inputs = frozenset({Input.QUESTION})
    metrics = (
        MetricSpec(
            "Reciprocal rank",
            "1 / rank of the first expected document among the retrieved (0 beyond k_max)",
            threshold=0.5,
            primary=True,
        ),
        MetricSpec(
            "Hit@k",
            "1 when an expected document is among the first k retrieved",
            threshold=0.5,
            kind="pass_fail",
        ),
        MetricSpec(
            "Document recall@k",
            "share of the expected documents among the first k retrieved",
        ),
    )

    @classmethod
    def applies_to(cls, sample: Sample) -> bool:
        """Only cases with expected documents are in scope."""
        return any(d and d.strip() for d in sample.expected_documents)

    def score(self, sample: Sample) -> Mapping[str, Scored]:
        match = self.options.match
        k, k_max = self.options.k, self.options.k_max
        expected = _unique(sample.expected_documents, match)
        if not expected:
            raise SkipCase("the case has no expected documents (fill expected_documents)")
        retrieved = _unique(sample.documents, match)
        if not retrieved:
            return {
                "Reciprocal rank": Scored(0.0, NO_DOCUMENTS),
                "Hit@k": Scored(0.0, NO_DOCUMENTS),
                "Document recall@k": Scored(0.0, NO_DOCUMENTS),
            }
        rank_of = {key: rank for rank, (key, _) in enumerate(retrieved, start=1)}
        ranks = {name: rank_of.get(key) for key, name in expected}
        found = sorted((r, name) for name, r in ranks.items() if r is not None)
        repeats = len([d for d in sample.documents if d and d.strip()]) - len(retrieved)
        note = f" ({_count(repeats, 'repeated document')} dropped)" if repeats else ""

        if found and found[0][0] <= k_max:
            rank, first = found[0]
            rr = 1.0 / rank
            rr_reason = f"first expected document {first!r} at rank {rank}: 1/{rank}{note}"
        elif found:
            rank, first = found[0]
            rr = 0.0
            rr_reason = f"first expected document {first!r} at rank {rank}, beyond k_max {k_max}"
        else:
            rr = 0.0
            rr_reason = (
                f"none of the {len(expected)} expected documents among the "
                f"{len(retrieved)} retrieved{note}"
            )
        in_top = [name for rank, name in found if rank <= k]
        missing = [
            f"{name!r} ({'not retrieved' if r is None else f'rank {r}'})"
            for name, r in ranks.items()
            if r is None or r > k
        ]
        hit = 1.0 if in_top else 0.0
        hit_reason = (
            f"{in_top[0]!r} within the first {k}"
            if in_top
            else f"no expected document within the first {k} of {len(retrieved)} retrieved"
        )
        recall = len(in_top) / len(expected)
        recall_reason = f"{len(in_top)} of {len(expected)} expected documents within the first {k}"
        if missing:
            recall_reason += "; not in them: " + ", ".join(missing[:5])
            if len(missing) > 5:
                recall_reason += f" and {len(missing) - 5} more"
        return {
            "Reciprocal rank": Scored(rr, rr_reason),
            "Hit@k": Scored(hit, hit_reason),
            "Document recall@k": Scored(recall, recall_reason),
        }

    def summarize(
        self, samples: Sequence[Sample], results: Sequence[Sequence[MetricResult]]
    ) -> dict[str, Any] | None:
        """Means of the per-case scores: MRR, hit rate and document recall at k."""
        by_metric: dict[str, list[float]] = {m.name: [] for m in self.metrics}
        for case_results in results:
            for r in case_results:
                if r.status == "scored" and r.score is not None and r.metric in by_metric:
                    by_metric[r.metric].append(r.score)
        cases = len(by_metric["Reciprocal rank"])
        if not cases:
            return None
        return {
            "mrr": _mean(by_metric["Reciprocal rank"]),
            "hit_rate@k": _mean(by_metric["Hit@k"]),
            "document_recall@k": _mean(by_metric["Document recall@k"]),
            "k": self.options.k,
            "k_max": self.options.k_max,
            "cases": cases,
        }


_TOKEN = re.compile(r"\w+")
#: Rule 2: a retrieved chunk inside the expected passage must be at least this share of it.
MIN_CONTAINED_SHARE = 0.5
#: Rule 3: share of the expected passage's tokens that must occur in one retrieved chunk.
MIN_TOKEN_RECALL = 0.8


def _normalise(text: str) -> str:
    return " ".join(text.casefold().split())


def _preview(text: str, width: int = 60) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


class _Chunk:
    __slots__ = ("text", "tokens")

    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens: Counter[str] | None = None

    def token_counts(self) -> Counter[str]:
        if self.tokens is None:
            self.tokens = Counter(_TOKEN.findall(self.text))
        return self.tokens


def chunk_found(expected: str, chunk: str, expected_tokens: Counter[str] | None = None) -> bool:
    """Whether the expected passage is found in one retrieved chunk (rules in the docstring)."""
    return _match(_normalise(expected), _Chunk(_normalise(chunk)), expected_tokens) is not None


def _match(e: str, chunk: _Chunk, e_tokens: Counter[str] | None) -> str | None:
    c = chunk.text
    if not c or not e:
        return None
    if e in c:
        return "contained in"
    if c in e and len(c) >= MIN_CONTAINED_SHARE * len(e):
        return "contains"
    if e_tokens is None:
        e_tokens = Counter(_TOKEN.findall(e))
    total = sum(e_tokens.values())
    if total:
        shared = sum((e_tokens & chunk.token_counts()).values())
        if shared >= MIN_TOKEN_RECALL * total:
            return f"shares {shared}/{total} tokens with"
    return None


@register
class ChunkMatch(Evaluator):
    """Share of the expected contexts the retriever found, by text (containment or token
    overlap) rather than by id, for suites that record the passages themselves.

    >>> sample = Sample(question="What is the refund policy?",
    ...                 contexts=["Refunds are issued within 14 days.", "Shipping is free."],
    ...                 expected_contexts=["refunds are issued within 14 days",
    ...                                    "Returns need a receipt."])
    >>> for r in ChunkMatch().evaluate(sample):
    ...     print(f"{r.metric}: {r.score:.2f} - {r.reason}")
    Chunk match: 0.50 - 1 of 2 expected contexts found in 2 retrieved chunks; 'refunds are
        issued within 14 days' contained in chunk 1; not found: 'returns need a receipt.'
    """

    name = "Chunk match"
    description = (
        "Share of the expected contexts found in the retrieved chunks (containment either way "
        "or 80% token overlap, after case and whitespace normalisation)."
    )
    inputs = frozenset({Input.EXPECTED_CONTEXTS, Input.CONTEXTS})
    metrics = (
        MetricSpec(
            "Chunk match",
            "share of the expected contexts found in the retrieved chunks",
            primary=True,
        ),
    )

    def score(self, sample: Sample) -> Mapping[str, Scored]:
        expected = list(dict.fromkeys(n for n in map(_normalise, sample.expected_contexts) if n))
        if not expected:
            raise SkipCase("the case's expected contexts are all blank")
        chunks = [_Chunk(_normalise(c)) for c in sample.contexts]
        found: list[str] = []
        missing: list[str] = []
        for e in expected:
            e_tokens = Counter(_TOKEN.findall(e))
            hit = next(
                (
                    (rank, how)
                    for rank, chunk in enumerate(chunks, start=1)
                    if (how := _match(e, chunk, e_tokens)) is not None
                ),
                None,
            )
            if hit is None:
                missing.append(e)
            else:
                found.append(f"{_preview(e, 40)!r} {hit[1]} chunk {hit[0]}")
        share = len(found) / len(expected)
        reason = (
            f"{len(found)} of {len(expected)} expected contexts found in "
            f"{_count(len(chunks), 'retrieved chunk')}"
        )
        if found:
            reason += "; " + "; ".join(found[:3]) + ("; …" if len(found) > 3 else "")
        if missing:
            reason += "; not found: " + ", ".join(repr(_preview(m)) for m in missing[:3])
            if len(missing) > 3:
                reason += f" and {len(missing) - 3} more"
        return {"Chunk match": Scored(share, reason)}
