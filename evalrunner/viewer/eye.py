"""The case page's "Evaluation Eye": each answer sentence coloured by how well the retrieved
contexts support it, and the context sentences that support it marked.

The reports keep no per-sentence support (the judged Faithfulness keeps its verdict and reason,
the model metrics one score per case), so this is computed here, without a model or a judge,
from what the lexical metrics already use: the evaluators' own sentence splitter
(:func:`evalrunner.evaluators.sentences.split_sentences`) and SQuAD normalisation
(:func:`evalrunner.evaluators.lexical.squad_normalize`, as Token F1 does). A sentence's
support is the largest share of its words found in one context sentence (word recall, the
idea of ROUGE-1 recall). It is a reading aid that says what it is, not a metric: the metrics
and their reasons are listed beside it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel

from evalrunner.evaluators.lexical import squad_normalize
from evalrunner.evaluators.sentences import split_sentences

Level = Literal["supported", "partial", "unsupported"]
SUPPORTED = 0.7
PARTIAL = 0.4


class AnswerSentence(BaseModel):
    text: str
    support: float
    level: Level
    #: the context and its sentence that support it best (None: no word in common)
    context: int | None = None
    span: int | None = None


class ContextSpan(BaseModel):
    text: str
    #: the answer sentences (numbers from 1) this span supports at least partly
    supports: list[int]


class Eye(BaseModel):
    sentences: list[AnswerSentence]
    contexts: list[list[ContextSpan]]
    method: str = (
        "share of each answer sentence's words found in its best-matching context sentence "
        "(SQuAD-normalised words, as Token F1 uses; sentences split as the model metrics split "
        f"them): supported ≥ {SUPPORTED:g}, partly ≥ {PARTIAL:g}"
    )


def _words(text: str) -> set[str]:
    return set(squad_normalize(text).split())


def _level(support: float) -> Level:
    return (
        "supported" if support >= SUPPORTED else "partial" if support >= PARTIAL else "unsupported"
    )


def evaluation_eye(answer: str | None, contexts: Sequence[str]) -> Eye:
    """The answer's sentences with their support and the contexts cut into marked spans."""
    spans = [split_sentences(c) or ([c] if c.strip() else []) for c in contexts]
    span_words = [[_words(s) for s in context] for context in spans]
    marks: list[list[list[int]]] = [[[] for _ in context] for context in spans]
    sentences: list[AnswerSentence] = []
    for number, sentence in enumerate(split_sentences(answer), start=1):
        words = _words(sentence)
        best, where = 0.0, None
        for c, context in enumerate(span_words):
            for s, candidate in enumerate(context):
                share = len(words & candidate) / len(words) if words else 0.0
                if share > best:
                    best, where = share, (c, s)
        level = _level(best)
        if where is not None and level != "unsupported":
            marks[where[0]][where[1]].append(number)
        sentences.append(
            AnswerSentence(
                text=sentence,
                support=best,
                level=level,
                context=where[0] if where else None,
                span=where[1] if where else None,
            )
        )
    return Eye(
        sentences=sentences,
        contexts=[
            [ContextSpan(text=t, supports=m) for t, m in zip(texts, context_marks, strict=True)]
            for texts, context_marks in zip(spans, marks, strict=True)
        ],
    )
