"""What the conversation metrics share: a conversation cut into numbered turns, its
rendering for the judge (every text delimited as untrusted data), and reply schemas that
reject turn numbers the conversation does not have.

A *turn* is one exchange: what the user said (all user messages since the last answer,
joined) and the assistant's answer to it, numbered from 1 in order, the way the per-turn
records number them. System messages are not turns. An answer with no user message before
it (an agent that opens with a greeting) is a turn whose user part is empty.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, ClassVar, Self, TypeVar

from pydantic import BaseModel, model_validator

from evalrunner.evaluators.base import Sample, SkipCase
from evalrunner.judge.prompts import tagged, wrapped

M = TypeVar("M", bound="TurnReply")

#: Told to the judge in every conversation prompt, so turn numbers mean one thing.
TURN_LEGEND = (
    'The conversation inside <conversation> is numbered by turn: <user id="k"> is what the '
    'user said in turn k and <assistant id="k"> is the assistant\'s reply in turn k.'
)


@dataclass(frozen=True)
class Exchange:
    """Turn ``number``: the user's message(s) and the assistant's answer."""

    number: int
    user: str
    assistant: str


def exchanges(sample: Sample) -> list[Exchange]:
    """The conversation's turns; skips the case when the target never answered."""
    out: list[Exchange] = []
    pending: list[str] = []
    for turn in sample.turns:
        if turn.role == "user":
            pending.append(turn.content)
        elif turn.role == "assistant":
            out.append(Exchange(len(out) + 1, "\n".join(pending), turn.content))
            pending = []
    if not out:
        raise SkipCase("the conversation has no answer of the target to judge")
    return out


def conversation_block(
    turns: Sequence[Exchange], *, container: str = "conversation", id: int | None = None
) -> str:
    """The turns as delimited data: ``<user id="k">`` and ``<assistant id="k">`` per turn."""
    blocks = []
    for turn in turns:
        if turn.user.strip():
            blocks.append(tagged("user", turn.user, id=turn.number))
        blocks.append(tagged("assistant", turn.assistant, id=turn.number))
    return wrapped(container, blocks, id=id)


def user_block(turns: Sequence[Exchange]) -> str:
    """Only what the user said, by turn (for extracting the user's facts or intentions)."""
    blocks = [tagged("user", t.user, id=t.number) for t in turns if t.user.strip()]
    return wrapped("conversation", blocks)


def quoted(text: str, limit: int = 160) -> str:
    """A judge-written text quoted in a reason, whitespace collapsed and cut."""
    text = " ".join(text.split())
    return f'"{text if len(text) <= limit else text[: limit - 1] + "…"}"'


def because(reason: str) -> str:
    return f" ({' '.join(reason.split())})" if reason.strip() else ""


# --------------------------------------------------------------------------- reply schemas


def _bare_list(key: str, data: Any) -> Any:
    # Some models answer a bare JSON list where an object was asked for; accept it.
    return {key: data} if isinstance(data, list) else data


class TurnReply(BaseModel):
    """A judge reply that names turns. Validation (where the judge client's repair step sees
    it) rejects a turn the conversation does not have and, for per-turn verdicts, a turn
    judged twice or not at all: a judge cannot fail a turn that never happened."""

    #: The conversation's turn numbers (set per conversation by :func:`for_turns`).
    turns: ClassVar[tuple[int, ...]] = ()
    #: True: exactly one entry per assistant turn.
    each_turn_once: ClassVar[bool] = False
    #: List lengths the prompt fixes, for the schema sent to the judge (see
    #: :func:`evalrunner.judge.reply_format.wire_schema`); set by :func:`for_turns`.
    expected_counts: ClassVar[Mapping[str, int]] = {}
    #: The field holding the reply's turn-numbered entries (each has a ``turn``).
    entries: ClassVar[str] = ""

    @model_validator(mode="before")
    @classmethod
    def _bare(cls, data: Any) -> Any:
        return _bare_list(cls.entries, data) if cls.entries else data

    def named_turns(self) -> list[int]:
        """The turns the reply's entries name, in order."""
        if not self.entries:
            return []
        return [entry.turn for entry in getattr(self, self.entries)]

    @classmethod
    def dry_fit(cls, raw: dict[str, Any]) -> dict[str, Any]:
        """``raw`` (a schema-shaped stand-in reply, as the cost estimate's dry judge writes
        one) made valid for this conversation: its list entries name the conversation's
        turns in order. The estimate counts the prompts a run sends; without this every
        turn-checked reply would fail validation and the conversation would cost nothing."""
        if not cls.turns:
            return raw
        for value in raw.values():
            if isinstance(value, list):
                for i, entry in enumerate(value):
                    if isinstance(entry, dict) and "turn" in entry:
                        entry["turn"] = cls.turns[min(i, len(cls.turns) - 1)]
        return raw

    @model_validator(mode="after")
    def _check_turns(self) -> Self:
        allowed = set(type(self).turns)
        named = self.named_turns()
        wrong = sorted({t for t in named if t not in allowed})
        if wrong:
            raise ValueError(
                f"turn(s) {wrong} are not turns of this conversation, whose turns are "
                f"{min(allowed, default=0)} to {max(allowed, default=0)}"
            )
        if type(self).each_turn_once and sorted(named) != sorted(allowed):
            raise ValueError(
                f"give exactly one verdict for each assistant turn {sorted(allowed)}, in "
                f"order; got verdicts for turns {named}"
            )
        return self


@lru_cache(maxsize=256)
def _for_turns(
    schema: type[M], turns: tuple[int, ...], extra: tuple[tuple[str, Any], ...]
) -> type[M]:
    # Same class name as the base: clients may use it as a schema name (OpenAI wants [\w-]+).
    namespace: dict[str, Any] = {"turns": turns, "__module__": schema.__module__, **dict(extra)}
    if schema.each_turn_once:
        # Read by the wire schema: a grammar-constrained judge writes one entry per turn.
        namespace["expected_counts"] = {"verdicts": len(turns)}
    return type(schema.__name__, (schema,), namespace)


def for_turns(schema: type[M], turns: Sequence[Exchange], **extra: Any) -> type[M]:
    """``schema`` checked against this conversation's turn numbers (one class per shape)."""
    return _for_turns(schema, tuple(t.number for t in turns), tuple(sorted(extra.items())))


class TurnVerdict(BaseModel):
    turn: int
    #: Before the verdict so a model that writes in schema order reasons first.
    reason: str = ""
    verdict: bool


class TurnVerdicts(TurnReply):
    """One yes/no verdict per assistant turn."""

    each_turn_once: ClassVar[bool] = True
    entries: ClassVar[str] = "verdicts"
    verdicts: list[TurnVerdict]


TURN_VERDICTS_REPLY = (
    'Reply with one JSON object and nothing else: {"verdicts": [{"turn": <k>, "reason": '
    '"<one short sentence>", "verdict": true or false}, ...]} with exactly one entry per '
    "assistant turn, in order."
)
