"""Extraction and verdict steps shared by the judge metrics.

Cost model (issue #5): a text is split into statements by ONE judge call whose prompt depends
on the text alone, so every metric that needs the statements of the same text sends the same
prompt and the judge's content-addressed cache answers all but the first; all verdicts of one
metric for one case come from ONE call; and two metrics that judge the same statements against
the same evidence share that call (:func:`statement_checks`: ``supported`` and ``relevant`` per
statement). Statements no other metric needs are extracted and judged in the same call
(:func:`judged_statements`, :func:`judged_text`). Replies carry a reason of one short sentence
and echo no item that their position already identifies.

*Claims* and *statements* are the same thing here. DeepEval extracts "claims" for faithfulness
and "statements" for answer relevancy with two prompts, and Ragas has its own again; evalrunner
extracts the atomic statements of a text once and uses them as claims too (:func:`claims` is
:func:`statements`), so Faithfulness and Answer Relevancy share one extraction per answer.

Replies whose lists have the wrong length (three verdicts for four statements) fail schema
validation, so the judge client's repair step gets a chance to fix them; if it cannot, the
client raises :class:`JudgeParseError` and the metric reports a parsing failure. The length is
checked again here, whatever the client did.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Any, ClassVar, Self, TypeVar

from pydantic import BaseModel, model_validator

from evalrunner.judge import prompts
from evalrunner.judge.base import Judge, JudgeParseError, Message

R = TypeVar("R", bound=BaseModel)


class CountedReply(BaseModel):
    """A reply with lists whose lengths are fixed by the prompt (one verdict per item).

    Subclasses made by :func:`counted` carry the expected lengths as a class variable, so the
    check runs inside pydantic validation, where the judge client's repair step sees it.
    """

    expected_counts: ClassVar[Mapping[str, int]] = {}

    @model_validator(mode="after")
    def _check_counts(self) -> Self:
        problems = count_problems(self)
        if problems:
            raise ValueError("; ".join(problems))
        return self


def count_problems(reply: CountedReply) -> list[str]:
    out = []
    for name, n in type(reply).expected_counts.items():
        got = len(getattr(reply, name))
        if got != n:
            out.append(f"'{name}' must have exactly {n} entries, one per item in order; got {got}")
    return out


@lru_cache(maxsize=512)
def _counted(schema: type[R], counts: tuple[tuple[str, int], ...]) -> type[R]:
    # Same class name as the base: clients may use it as a schema name (OpenAI wants [\w-]+).
    namespace = {"expected_counts": dict(counts), "__module__": schema.__module__}
    return type(schema.__name__, (schema,), namespace)


def counted(schema: type[R], **counts: int) -> type[R]:
    """``schema`` requiring ``len(field) == n`` for each ``field=n``; one class per counts."""
    return _counted(schema, tuple(sorted(counts.items())))


@lru_cache(maxsize=512)
def _bounded(schema: type[R], limits: tuple[tuple[str, int], ...]) -> type[R]:
    namespace = {"max_counts": dict(limits), "__module__": schema.__module__}
    return type(schema.__name__, (schema,), namespace)


def bounded(schema: type[R], **limits: int) -> type[R]:
    """``schema`` whose lists ``field`` hold at most ``n`` items as the server is told
    (``maxItems`` in the wire schema, and the reply budget sized for that many), for lists
    of open length where a few are all the text can hold. Validation does not refuse a
    longer list: a judge without structured output may still write one."""
    return _bounded(schema, tuple(sorted(limits.items())))


#: Statements of a text: about one per this many words, at least MIN and at most MAX.
WORDS_PER_STATEMENT = 4
MIN_STATEMENTS = 4
MAX_STATEMENTS = 64


def max_statements(text: str) -> int:
    """How many statements a text can hold, generously: a one-sentence answer a handful
    (a grammar-constrained small model cannot run on repeating itself), a long one many."""
    words = len(text.split())
    return max(MIN_STATEMENTS, min(MAX_STATEMENTS, words // WORDS_PER_STATEMENT + 2))


def _wrap_list(key: str, data: Any) -> Any:
    # Some models answer a bare JSON list where an object was asked for; accept it.
    return {key: data} if isinstance(data, list) else data


class Verdict(BaseModel):
    #: Before the verdict so a model that writes in schema order reasons first.
    reason: str = ""
    verdict: bool


class Verdicts(CountedReply):
    verdicts: list[Verdict]

    @model_validator(mode="before")
    @classmethod
    def _bare_list(cls, data: Any) -> Any:
        return _wrap_list("verdicts", data)


class StatementCheck(BaseModel):
    """Two verdicts on one statement of an answer, from ONE call shared by Faithfulness
    (``supported``) and Answer Relevancy (``relevant``)."""

    reason: str = ""
    supported: bool
    relevant: bool


class StatementChecks(CountedReply):
    checks: list[StatementCheck]

    @model_validator(mode="before")
    @classmethod
    def _bare_list(cls, data: Any) -> Any:
        return _wrap_list("checks", data)


class Statements(BaseModel):
    #: At most how many statements the server is told to write (:func:`bounded`).
    max_counts: ClassVar[Mapping[str, int]] = {}

    statements: list[str]

    @model_validator(mode="before")
    @classmethod
    def _bare_list(cls, data: Any) -> Any:
        return _wrap_list("statements", data)


class JudgedStatement(BaseModel):
    statement: str
    reason: str = ""
    verdict: bool


class TextStatements(BaseModel):
    statements: list[JudgedStatement]

    @model_validator(mode="before")
    @classmethod
    def _bare_list(cls, data: Any) -> Any:
        return _wrap_list("statements", data)


class JudgedTexts(CountedReply):
    texts: list[TextStatements]

    @model_validator(mode="before")
    @classmethod
    def _bare_list(cls, data: Any) -> Any:
        return _wrap_list("texts", data)


def ask(judge: Judge, messages: list[Message], schema: type[R], *, purpose: str) -> R:
    """``judge.ask(...).value``, with the reply's list lengths checked again."""
    value = judge.ask(messages, schema, purpose=purpose).value
    if isinstance(value, CountedReply):
        problems = count_problems(value)
        if problems:
            raise JudgeParseError(f"{purpose}: " + "; ".join(problems))
    return value


# --- statements ------------------------------------------------------------------------------


def statements_prompt(text: str) -> list[Message]:
    """Depends on ``text`` only (not on the metric or purpose), so the cache is shared."""
    return prompts.build(
        "Split the text in <text> into atomic statements. " + prompts.STATEMENT_RULES,
        [prompts.tagged("text", text)],
        'Reply as {"statements": ["<statement>", ...]}.',
    )


def _clean(items: Sequence[str]) -> list[str]:
    """Stripped, non-empty, first occurrence only (a repeated statement counts once)."""
    seen: set[str] = set()
    out = []
    for item in items:
        item = " ".join(item.split())
        if item and item not in seen:
            seen.add(item)
            out.append(item)
    return out


def statements(judge: Judge, text: str, *, purpose: str = "statements") -> list[str]:
    """The atomic statements of ``text``: one judge call; an empty text gives [] and no call."""
    if not text.strip():
        return []
    schema = bounded(Statements, statements=max_statements(text))
    reply = ask(judge, statements_prompt(text), schema, purpose=purpose)
    return _clean(reply.statements)


def claims(judge: Judge, text: str) -> list[str]:
    """The claims of an answer. They are its statements: same prompt, same (cached) call."""
    return statements(judge, text)


# --- verdicts --------------------------------------------------------------------------------


def evidence_blocks(
    *,
    question: str | None = None,
    answer: str | None = None,
    expected_answer: str | None = None,
    context: Sequence[str] | None = None,
) -> list[str]:
    """The delimited case texts a judgement is made against, in a fixed order."""
    blocks = []
    if question is not None:
        blocks.append(prompts.tagged("question", question))
    if expected_answer is not None:
        blocks.append(prompts.tagged("expected_answer", expected_answer))
    if answer is not None:
        blocks.append(prompts.tagged("answer", answer))
    if context is not None:
        blocks.append(prompts.tagged_list("context", "chunk", context))
    return blocks


def verdicts(
    judge: Judge,
    items: Sequence[str],
    *,
    rubric: str,
    purpose: str,
    question: str | None = None,
    answer: str | None = None,
    expected_answer: str | None = None,
    context: Sequence[str] | None = None,
    item_tag: str = "statement",
    container: str = "statements",
) -> list[Verdict]:
    """One verdict per item, all in ONE call; no items, no call.

    ``rubric`` says what ``verdict: true`` means. The items are rendered as
    ``<container><item_tag id="1">...`` after the evidence (question, expected answer,
    answer, retrieved context chunks). A reply with another number of verdicts than items is
    a :class:`JudgeParseError` (after the client's repair attempt).
    """
    if not items:
        return []
    schema = counted(Verdicts, verdicts=len(items))
    messages = prompts.build(
        rubric,
        [
            *evidence_blocks(
                question=question, answer=answer, expected_answer=expected_answer, context=context
            ),
            prompts.tagged_list(container, item_tag, items),
        ],
        prompts.VERDICT_REPLY.format(n=len(items), what=f"{item_tag} id"),
    )
    return ask(judge, messages, schema, purpose=purpose).verdicts


def statement_checks(
    judge: Judge,
    items: Sequence[str],
    *,
    rubric: str,
    purpose: str,
    question: str | None = None,
    context: Sequence[str] | None = None,
) -> list[StatementCheck]:
    """Two verdicts per statement (``supported``, ``relevant``), all in ONE call; no items,
    no call. The prompt depends on the statements and the evidence only, so every metric that
    reads one of the two fields sends the same prompt and the cache answers all but the first.
    """
    if not items:
        return []
    n = len(items)
    schema = counted(StatementChecks, checks=n)
    messages = prompts.build(
        rubric,
        [
            *evidence_blocks(question=question, context=context),
            prompts.tagged_list("statements", "statement", items),
        ],
        'Reply as {"checks": [{"reason": "<one short sentence>", "supported": true or false, '
        f'"relevant": true or false}}, ...]}} with exactly {n} entries: entry i checks '
        "statement id i, in order.",
    )
    return ask(judge, messages, schema, purpose=purpose).checks


def _judged_reply(what: str) -> str:
    return (
        '{"statements": [{"statement": "<statement>", "reason": "<one short sentence>", '
        f'"verdict": true or false}}, ...]}} for {what}'
    )


def judged_statements(
    judge: Judge,
    texts: Sequence[str],
    *,
    rubric: str,
    purpose: str,
    question: str | None = None,
    container: str = "context",
    item_tag: str = "chunk",
) -> list[list[JudgedStatement]]:
    """Split each text into atomic statements AND judge each statement, in ONE call.

    For statements no other metric needs (those of the retrieved chunks, for Contextual
    Relevancy), fusing extraction and verdicts saves a call. Returns one list per text.
    """
    if not texts:
        return []
    n = len(texts)
    schema = counted(JudgedTexts, texts=n)
    messages = prompts.build(
        f"Split each {item_tag} in <{container}> into atomic statements. "
        + prompts.STATEMENT_RULES
        + f" Judge each statement. {rubric}",
        [*evidence_blocks(question=question), prompts.tagged_list(container, item_tag, texts)],
        'Reply as {"texts": [' + _judged_reply(f"each {item_tag}") + f", ...]}} with exactly "
        f"{n} entries: entry i for {item_tag} id i, in order.",
    )
    reply = ask(judge, messages, schema, purpose=purpose)
    return [[s for s in text.statements if s.statement.strip()] for text in reply.texts]


def judged_text(
    judge: Judge,
    text: str,
    *,
    tag: str,
    rubric: str,
    purpose: str,
    question: str | None = None,
    context: Sequence[str] | None = None,
) -> list[JudgedStatement]:
    """Split ONE text (inside ``<tag>``) into atomic statements AND judge each, in ONE call;
    an empty text gives [] and no call. The evidence (question, context) comes first."""
    if not text.strip():
        return []
    messages = prompts.build(
        f"Split the text in <{tag}> into atomic statements. "
        + prompts.STATEMENT_RULES
        + f" Judge each statement. {rubric}",
        [*evidence_blocks(question=question, context=context), prompts.tagged(tag, text)],
        "Reply as " + _judged_reply(f"the <{tag}> text") + ".",
    )
    reply = ask(judge, messages, TextStatements, purpose=purpose)
    seen: set[str] = set()
    out = []
    for s in reply.statements:
        key = " ".join(s.statement.split())
        if key and key not in seen:
            seen.add(key)
            out.append(s)
    return out
