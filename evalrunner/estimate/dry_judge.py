"""A judge that calls nothing: it answers every ask with a minimal reply that validates as the
asked schema and counts the calls and tokens the real judge would have been sent.

The estimate runs the metrics' own prompt building against it, so the prompts counted are the
prompts a run sends (the reply format line included, as the clients add it), and a metric that
skips a case (missing inputs) or shares a prompt with another (Faithfulness and Answer
Relevancy ask one statement check; the second is a cache hit) costs here what it costs there.
"""

from __future__ import annotations

import json
import re
from typing import Any, TypeVar

from pydantic import BaseModel

from evalrunner.judge.base import Judge, JudgeReply, JudgeUsage, Message, record_case_usage
from evalrunner.judge.cache import cache_key
from evalrunner.judge.reply_format import Leaves, schema_instance, wire_schema, with_reply_format

T = TypeVar("T", bound=BaseModel)

#: Items in a list whose length the judge decides (the statements of an answer): a typical
#: RAG answer of two to four sentences gives about this many.
OPEN_LIST_ITEMS = 3
#: A string value of a reply (a statement, a one-sentence reason), as judges write them.
REPLY_SENTENCE = "The context states this directly, so the statement is supported by it."
#: Tokens as a BPE tokenizer cuts English: a word piece of up to this many letters is one
#: token, each other non-space character is one. Hand-written because no tokenizer of the
#: judge's model is available offline (tiktoken downloads its tables); on English prose and
#: the prompts' markup it comes within about 10 % of WordPiece and cl100k counts.
PIECE_CHARS = 6
_PIECES = re.compile(r"[A-Za-z0-9]+|[^\sA-Za-z0-9]")


def count_tokens(text: str) -> int:
    """About the tokens a judge model's tokenizer makes of ``text`` (see PIECE_CHARS)."""
    total = 0
    for piece in _PIECES.findall(text):
        total += 1 if len(piece) <= PIECE_CHARS else -(-len(piece) // PIECE_CHARS)
    return total


def _items(node: dict[str, Any]) -> int:
    n = int(node.get("minItems", OPEN_LIST_ITEMS))
    return min(n, int(node.get("maxItems", n)))


def _number(node: dict[str, Any]) -> float:
    value = node.get("maximum", node.get("minimum", 1))
    return float(value) if isinstance(value, int | float) else 1.0


#: A plausible minimal reply: a sentence per string, lists as long as the prompt fixes them
#: (else OPEN_LIST_ITEMS), the highest allowed number.
DRY_LEAVES = Leaves(text=lambda name: REPLY_SENTENCE, items=_items, number=_number)


def dry_reply(schema: type[T]) -> T:
    """A reply that validates as ``schema`` (lists fixed by the prompt have their length).
    A schema checked against its case (a conversation's turn numbers) fits the stand-in to
    it through its ``dry_fit`` classmethod."""
    raw = schema_instance(wire_schema(schema), "value", DRY_LEAVES)
    fit = getattr(schema, "dry_fit", None)
    if callable(fit) and isinstance(raw, dict):
        raw = fit(raw)
    return schema.model_validate(raw)


class DryJudge(Judge):
    """Counts what a run's judge would be asked, per run (``usage``) and per case (through
    ``record_case_usage``, as the real clients do); identical asks are cache hits, as in a
    run (the estimate assumes an empty judge cache at the start)."""

    def __init__(self, model: str = "dry-judge") -> None:
        super().__init__()
        self.model = model
        self._seen: dict[str, str] = {}

    def reply(self, schema: type[T]) -> T:
        """The stand-in reply to an ask of ``schema`` (:func:`dry_reply`; a subclass may
        give a reply whose size its caller fixes, as the red team's attack count)."""
        return dry_reply(schema)

    def ask(
        self,
        messages: list[Message],
        schema: type[T],
        *,
        purpose: str,
        logprobs: bool = False,
    ) -> JudgeReply[T]:
        messages = [m if isinstance(m, Message) else Message.model_validate(m) for m in messages]
        usage = JudgeUsage()
        key = cache_key(self.model, messages, schema, logprobs)
        with self._lock:
            text = self._seen.get(key)
        if text is not None:
            usage.cached += 1
            value = schema.model_validate_json(text)
        else:
            value = self.reply(schema)
            text = json.dumps(value.model_dump(mode="json"), ensure_ascii=False)
            prompt = with_reply_format(messages, schema)
            usage.calls = 1
            usage.input_tokens = sum(count_tokens(m.content) for m in prompt)
            usage.output_tokens = count_tokens(text)
            with self._lock:
                self._seen[key] = text
        self._account(usage)
        record_case_usage(purpose, usage)
        return JudgeReply(value=value, usage=usage, cached=usage.cached > 0)


__all__ = ["DryJudge", "count_tokens", "dry_reply"]
