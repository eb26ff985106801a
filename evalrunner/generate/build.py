"""From documents to suite rows: chunk, find topics, ask the judge for each kind of case,
validate, and account for what the judge cost. The suite is written by the caller
(:func:`evalrunner.suite.template.write_suite_xlsx`), so it is the runner's own template."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from openpyxl.cell.cell import ILLEGAL_CHARACTERS_RE
from pydantic import BaseModel, Field

from evalrunner.errors import ConfigError
from evalrunner.generate.chunks import DEFAULT_MAX_WORDS, Chunk, chunk_documents
from evalrunner.generate.documents import Document, load_documents
from evalrunner.generate.kinds import KINDS, REFUSAL_ANSWER, Drafts, Kind, messages
from evalrunner.generate.topics import Topic, find_topics
from evalrunner.generate.validate import Candidate, Rejection, Validator
from evalrunner.judge.base import Judge, JudgeError, JudgeUsage
from evalrunner.reports.analysis.clustering import Embed

#: The most chunks one ask shows the judge (a topic's first ones): bounds the prompt size.
MAX_CHUNKS_PER_ASK = 8
MAX_PER_ASK = 20


class TopicSummary(BaseModel):
    name: str
    chunks: list[str]
    documents: list[str]


class GenerationReport(BaseModel):
    """What ``generate`` did: written next to the suite as ``<suite>.generation.json``."""

    source: str
    documents: int
    chunks: int
    topics: list[TopicSummary]
    counts: dict[str, int]
    topic_method: str
    validation_method: str
    drafted: int
    kept: int
    kept_by_kind: dict[str, int]
    rejected_by_reason: dict[str, int]
    rejected: list[Rejection]
    #: Asks the judge failed (after its retries), with the error; their cases are missing.
    failed_asks: list[str] = Field(default_factory=list)
    #: Asks not made, and why (a two-source kind on a one-chunk topic).
    skipped_asks: list[str] = Field(default_factory=list)
    judge_model: str
    judge: dict[str, int]


def _text(value: str) -> str:
    # characters an xlsx cannot hold (control characters from a model's reply)
    return str(ILLEGAL_CHARACTERS_RE.sub("", value)).strip()


def _candidates(
    kind: Kind, topic: str, drafts: Drafts, chunks: list[Chunk], n: int
) -> list[Candidate]:
    out = []
    for draft in drafts.cases[:n]:
        c = Candidate(
            kind=kind.name, topic=topic, question=_text(draft.question), answer=_text(draft.answer)
        )
        if kind.sources:
            numbers = list(dict.fromkeys(draft.sources))
            bad = [i for i in numbers if not 1 <= i <= len(chunks)]
            if bad:
                c.malformed = f"source number(s) {bad} name no chunk (1..{len(chunks)})"
            elif len(numbers) < kind.sources:
                c.malformed = (
                    f"cites {len(numbers)} chunk(s); a {kind.name} case needs {kind.sources}"
                )
            else:
                c.sources = [chunks[i - 1] for i in numbers]
        out.append(c)
    return out


def parse_counts(given: Mapping[str, int]) -> dict[str, int]:
    unknown = sorted(set(given) - set(KINDS))
    if unknown:
        raise ConfigError(
            f"--count: unknown kind(s) {', '.join(unknown)}; kinds: {', '.join(KINDS)}"
        )
    counts = {name: kind.default_count for name, kind in KINDS.items()} | dict(given)
    for name, n in counts.items():
        if not 0 <= n <= MAX_PER_ASK:
            raise ConfigError(f"--count {name}={n}: give 0 to {MAX_PER_ASK}")
    if not any(counts.values()):
        raise ConfigError("--count: every kind is 0; nothing to generate")
    return counts


def generate(
    source: str,
    judge: Judge,
    *,
    counts: Mapping[str, int],
    embed: Embed | None,
    max_words: int = DEFAULT_MAX_WORDS,
    documents: list[Document] | None = None,
) -> tuple[list[dict[str, Any]], GenerationReport]:
    """Suite rows and the report of how they were made. ``documents``: those under
    ``source``, when the caller read them already (the CLI does, before it loads a model)."""
    if documents is None:
        documents = load_documents(source)
    chunks = chunk_documents(documents, max_words)
    topics: list[Topic] = find_topics(chunks, embed)
    before = JudgeUsage()
    before.add(judge.usage)
    candidates: list[Candidate] = []
    failed: list[str] = []
    skipped: list[str] = []

    def ask(kind: Kind, topic: str, shown: list[Chunk]) -> None:
        n = counts.get(kind.name, 0)
        if n <= 0:
            return
        if kind.sources > len(shown) and kind.per == "topic":
            skipped.append(f"{kind.name} for topic {topic!r}: the topic has {len(shown)} chunk(s)")
            return
        try:
            reply = judge.ask(
                messages(kind, n, [c.text for c in shown], [t.name for t in topics]),
                Drafts,
                purpose=f"generate {kind.name}",
            )
        except JudgeError as exc:
            failed.append(f"{kind.name} for {topic!r}: {exc.message}")
            return
        candidates.extend(_candidates(kind, topic, reply.value, shown, n))

    for topic in topics:
        shown = topic.chunks[:MAX_CHUNKS_PER_ASK]
        for kind in KINDS.values():
            if kind.per == "topic":
                ask(kind, topic.name, shown)
    for kind in KINDS.values():
        if kind.per == "suite":
            ask(kind, "", [])

    validator = Validator(embed, judge if embed is None else None)
    needs_answer = {k.name: k.sources > 0 for k in KINDS.values()}
    checked = validator.run(candidates, needs_answer)

    rows: list[dict[str, Any]] = []
    for i, c in enumerate(checked.kept, start=1):
        kind = KINDS[c.kind]
        expected = (
            c.answer if kind.sources else REFUSAL_ANSWER if kind.name == "unanswerable" else None
        )
        categories = list(kind.categories) + ([f"topic:{c.topic}"] if c.topic else [])
        rows.append(
            {
                "id": f"gen-{i:04d}",
                "question": c.question,
                "expected_answer": expected,
                "expected_contexts": [ch.text for ch in c.sources],
                "expected_documents": list(dict.fromkeys(ch.document for ch in c.sources)),
                "categories": categories,
                "topic": c.topic or None,
            }
        )
    spent = judge.usage.as_dict()
    cost = {k: spent[k] - before.as_dict()[k] for k in spent}
    kept_by_kind = {name: sum(1 for c in checked.kept if c.kind == name) for name in KINDS}
    report = GenerationReport(
        source=source,
        documents=len(documents),
        chunks=len(chunks),
        topics=[
            TopicSummary(
                name=t.name,
                chunks=[c.id for c in t.chunks],
                documents=list(dict.fromkeys(c.document for c in t.chunks)),
            )
            for t in topics
        ],
        counts=dict(counts),
        topic_method="embeddings" if embed is not None else "TF-IDF",
        validation_method=checked.method,
        drafted=len(candidates),
        kept=len(checked.kept),
        kept_by_kind=kept_by_kind,
        rejected_by_reason=checked.counts(),
        rejected=checked.rejected,
        failed_asks=failed,
        skipped_asks=skipped,
        judge_model=judge.model,
        judge=cost,
    )
    return rows, report
