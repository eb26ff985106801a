"""How a judge is told the shape of its reply, how much it may write, and how a bad reply is
repaired.

Three lessons from real local model servers (issue 19) shape this module:

* **No schema document in the prompt.** Small models copy a JSON Schema they are shown
  (``{"properties": ...}``) instead of filling it in. The prompt shows a *filled-in example*
  (:func:`reply_example`); the schema itself goes to the server's structured-output parameter
  where there is one (:func:`wire_schema`), never into the text.
* **Every request has a reply budget** (:func:`reply_budget`), sized from the schema: a server
  without one generates until its context is full, and a single-slot server (llama.cpp) makes
  every other call wait behind it.
* **The repair changes the prompt**: it quotes the invalid reply and what is wrong with it and
  asks for the corrected object only (:func:`repair_messages`). Replaying the bad reply as the
  model's own turn and saying "try again" gave byte-identical output at temperature 0.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from pydantic import BaseModel

from evalrunner.judge.base import Message
from evalrunner.judge.prompts import RESERVED_TAGS, tagged

#: The line that joins the (last) system message: the reply's shape as an example.
EXAMPLE_LINE = (
    "Reply with one JSON object shaped like this example, with your own values in place of "
    "the placeholders: {example}"
)
#: The repair block, appended to the last user message (chat templates that insist on
#: alternating roles reject a second user turn, and replaying the bad reply as the model's
#: own turn primes it to repeat itself).
REPAIR_BLOCK = (
    "Your previous reply, quoted in <reply>, is not valid: {error}.\n\n{quoted}\n\nWrite the "
    "corrected JSON object only, with no other text, shaped like: {example}"
)
#: How much of an invalid reply the repair prompt quotes (a rambling reply is cut).
QUOTE_CHARS = 1500
#: Reply budget, in tokens: at least this much for any reply.
BUDGET_FLOOR = 256
#: ... plus, per string value of the reply (a "one short sentence" reason, a statement) ...
TOKENS_PER_STRING = 48
#: ... per other value (a boolean, a number) and per key ...
TOKENS_PER_VALUE = 4
#: ... and, when the reply holds a list whose length the text decides (the statements of a
#: text), this many times the tokens of the prompt's data: statements restate the text they
#: split (the instructions around it are not restated; sizing from the whole prompt gave
#: a one-sentence answer 1,100-1,800 tokens, issue 31).
OPEN_LIST_RATIO = 2.5
#: Characters per token when estimating a prompt (a low ratio: estimates err high).
CHARS_PER_TOKEN = 3
#: Keys that only a schema document has at its top level: a reply made of them is an echo.
_SCHEMA_KEYS = frozenset({"properties", "$defs", "$schema", "required", "additionalProperties"})
_NAME_CHARS = re.compile(r"[^A-Za-z0-9_-]")


# -- the schema as sent to a server -----------------------------------------------------------
def _inline(node: Any, defs: dict[str, Any], depth: int = 0) -> Any:
    """``node`` with local ``$ref``s replaced by their definitions and titles dropped (some
    grammar converters and tool APIs do not follow ``$ref``; titles are noise)."""
    if depth > 32:  # pragma: no cover - pydantic schemas of judge replies are not recursive
        return {}
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            target = defs.get(ref.split("/")[-1], {})
            merged = {**target, **{k: v for k, v in node.items() if k != "$ref"}}
            return _inline(merged, defs, depth + 1)
        return {
            k: _inline(v, defs, depth + 1)
            for k, v in node.items()
            if k != "$defs" and not (k == "title" and isinstance(v, str))
        }
    if isinstance(node, list):
        return [_inline(v, defs, depth + 1) for v in node]
    return node


def wire_schema(schema: type[BaseModel]) -> dict[str, Any]:
    """The JSON Schema of ``schema`` self-contained (no ``$ref``), for structured output; a
    list whose length the prompt fixes (``expected_counts``: one verdict per statement) gets
    ``minItems`` = ``maxItems``, so a grammar-constrained server writes exactly that many."""
    document = schema.model_json_schema()
    inlined = _inline(document, dict(document.get("$defs") or {}))
    if not isinstance(inlined, dict):  # pragma: no cover - pydantic models give objects
        return {"type": "object"}
    props = inlined.get("properties") or {}
    for name, n in dict(getattr(schema, "expected_counts", {}) or {}).items():
        if isinstance(props.get(name), dict) and props[name].get("type") == "array":
            props[name] = {**props[name], "minItems": n, "maxItems": n}
    # lists of open length the metric bounds (extract.bounded: the statements of a text)
    for name, n in dict(getattr(schema, "max_counts", {}) or {}).items():
        if isinstance(props.get(name), dict) and props[name].get("type") == "array":
            props[name] = {**props[name], "maxItems": n}
    return inlined


def schema_name(schema: type[BaseModel]) -> str:
    """A name servers accept (OpenAI's json_schema name and Bedrock's tool name: [\\w-]{1,64})."""
    return _NAME_CHARS.sub("_", schema.__name__)[:64] or "reply"


# -- the example --------------------------------------------------------------------------------
@dataclass(frozen=True)
class Leaves:
    """How :func:`schema_instance` fills the leaves of a schema: the example line and the
    cost estimate's dry judge walk schemas the same way and differ only here."""

    #: a string field, from its name
    text: Callable[[str], str]
    #: how many items a list gets, from its node (minItems / maxItems)
    items: Callable[[dict[str, Any]], int]
    #: a number field, from its node (minimum / maximum)
    number: Callable[[dict[str, Any]], float]


def schema_instance(node: Any, name: str, leaves: Leaves) -> Any:
    """A value of the self-contained (:func:`wire_schema`) schema ``node``: consts and the
    first enum value as given, the first non-null option of a union, ``true`` for booleans,
    and the leaves as ``leaves`` says."""
    if not isinstance(node, dict):
        return leaves.text(name)
    if "const" in node:
        return node["const"]
    if node.get("enum"):
        return node["enum"][0]
    for key in ("anyOf", "oneOf", "allOf"):
        options = [o for o in node.get(key) or () if o.get("type") != "null"]
        if options:
            return schema_instance(options[0], name, leaves)
    kind = node.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "string")
    if kind == "object" or "properties" in node:
        props = node.get("properties") or {}
        return {key: schema_instance(value, key, leaves) for key, value in props.items()}
    if kind == "array":
        items = node.get("items")
        item: dict[str, Any] = items if isinstance(items, dict) else {}
        singular = name[:-1] if name.endswith("s") else name
        return [schema_instance(item, singular, leaves) for _ in range(leaves.items(node))]
    if kind == "boolean":
        return True
    if kind in ("integer", "number"):
        number = leaves.number(node)
        return int(number) if kind == "integer" else float(number)
    return leaves.text(name)


#: The example line: placeholders named after their fields, the lowest allowed number, one
#: list item.
EXAMPLE_LEAVES = Leaves(
    text=lambda name: f"<{name.replace('_', ' ') or 'text'}>",
    items=lambda node: 1,
    number=lambda node: float(node.get("minimum", node.get("exclusiveMinimum", 0))),
)


@lru_cache(maxsize=1024)  # a pure function of the class, asked on every judge call
def reply_example(schema: type[BaseModel]) -> str:
    """A filled-in example of ``schema`` as compact JSON: placeholders named after their
    fields for strings (``"<reason>"``), ``true``, the lowest allowed number, one list item."""
    value = schema_instance(wire_schema(schema), "value", EXAMPLE_LEAVES)
    return json.dumps(value, ensure_ascii=False, separators=(", ", ": "))


def with_reply_format(messages: list[Message], schema: type[BaseModel]) -> list[Message]:
    """The messages with the example line as the last line of the (last) system message; a
    system message is added first when there is none (chat templates want it first)."""
    line = EXAMPLE_LINE.format(example=reply_example(schema))
    out = list(messages)
    for i in range(len(out) - 1, -1, -1):
        if out[i].role == "system":
            content = out[i].content.rstrip()
            out[i] = Message(role="system", content=f"{content}\n\n{line}" if content else line)
            return out
    return [Message(role="system", content=line), *out]


# -- the budget -----------------------------------------------------------------------------------
def _size(node: Any, counts: dict[str, int], top: bool) -> tuple[int, bool]:
    """(tokens of the fixed part, whether a list of open length is inside) of one value."""
    if not isinstance(node, dict):
        return TOKENS_PER_VALUE, False
    for key in ("anyOf", "oneOf", "allOf"):
        options = [o for o in node.get(key) or () if o.get("type") != "null"]
        if options:
            return _size(options[0], counts, top)
    kind = node.get("type")
    if kind == "object" or "properties" in node:
        total, open_list = 2, False
        for name, prop in (node.get("properties") or {}).items():
            if top and name in counts and isinstance(prop, dict) and prop.get("type") == "array":
                tokens, inner_open = _size(prop.get("items"), {}, False)
                tokens *= counts[name]
            else:
                tokens, inner_open = _size(prop, {}, False)
            total += TOKENS_PER_VALUE + tokens
            open_list = open_list or inner_open
        return total, open_list
    if kind == "array":
        tokens, _ = _size(node.get("items"), {}, False)
        return tokens, True
    if kind == "string":
        return TOKENS_PER_STRING, False
    return TOKENS_PER_VALUE, False


def estimate_tokens(messages: list[Message]) -> int:
    return sum(len(m.content) for m in messages) // CHARS_PER_TOKEN + 1


_TAG_NAMES = "|".join(sorted(map(re.escape, RESERVED_TAGS), key=len, reverse=True))
#: A line that opens or closes one of the prompt's data blocks (prompts.tagged).
_TAG_LINE = re.compile(rf'^\s*</?(?:{_TAG_NAMES})(?: id="\d+")?>\s*$')


def data_tokens(messages: list[Message]) -> int:
    """Tokens of the data the prompt hands over (the lines inside its tagged blocks: the
    answer, the contexts, the texts to split), not of its instructions. A prompt without
    tagged blocks (a user's own template) counts whole."""
    chars = 0
    tagged = False
    for message in messages:
        depth = 0
        for line in message.content.split("\n"):
            if _TAG_LINE.match(line):
                tagged = True
                depth += -1 if line.lstrip().startswith("</") else 1
                depth = max(depth, 0)
            elif depth > 0:
                chars += len(line) + 1
    if not tagged:
        return estimate_tokens(messages)
    return chars // CHARS_PER_TOKEN + 1


def reply_budget(schema: type[BaseModel], messages: list[Message], cap: int) -> int:
    """``max_tokens`` for one reply to ``messages`` as ``schema``: BUDGET_FLOOR, plus the
    fixed-length part (lists whose length the prompt fixes, e.g. one verdict per statement,
    from the schema's ``expected_counts``), plus OPEN_LIST_RATIO × the tokens of the data
    being processed (:func:`data_tokens`: the statements of a one-sentence answer restate
    that sentence, not the instructions around it) when a list's length depends on the
    text; never more than ``cap`` (``judge.max_tokens``)."""
    counts = dict(getattr(schema, "expected_counts", {}) or {})
    document = wire_schema(schema)
    fixed, open_list = _size(document, counts, True)
    budget = BUDGET_FLOOR + fixed
    if open_list:
        budget += int(OPEN_LIST_RATIO * data_tokens(messages))
        limits = dict(getattr(schema, "max_counts", {}) or {})
        if limits:  # at most that many items: never more than they can take
            full, _ = _size(document, {**limits, **counts}, True)
            budget = min(budget, BUDGET_FLOOR + full)
    return max(1, min(cap, budget))


# -- the repair -----------------------------------------------------------------------------------
def looks_like_schema(value: Any) -> bool:
    """Whether a parsed reply is a JSON Schema document rather than an answer."""
    return (
        isinstance(value, dict)
        and bool(_SCHEMA_KEYS & value.keys())
        and ("properties" in value or "$defs" in value)
    )


def repair_messages(
    prompt: list[Message], reply: str, error: str, schema: type[BaseModel]
) -> list[Message]:
    """``prompt`` with a repair block at the end of its last user message: the invalid reply
    (quoted, cut to QUOTE_CHARS, its tags defused like any untrusted text), what is wrong,
    and the example again."""
    text = reply.strip()
    if len(text) > QUOTE_CHARS:
        text = text[:QUOTE_CHARS] + " [cut]"
    block = REPAIR_BLOCK.format(
        error=error.rstrip("."),
        quoted=tagged("reply", text or "(empty reply)"),
        example=reply_example(schema),
    )
    out = list(prompt)
    if out and out[-1].role == "user":
        out[-1] = Message(role="user", content=f"{out[-1].content.rstrip()}\n\n{block}")
    else:
        out.append(Message(role="user", content=block))
    return out
