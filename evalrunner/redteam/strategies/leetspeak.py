"""Leetspeak: letters swapped for look-alike digits, past keyword filters."""

from __future__ import annotations

from evalrunner.redteam.model import Attack
from evalrunner.redteam.strategies.base import Strategy, StrategyTools, strategy

#: Letter → look-alike, applied to both cases.
LEET = str.maketrans(
    {
        "a": "4",
        "e": "3",
        "i": "1",
        "o": "0",
        "s": "5",
        "t": "7",
        "A": "4",
        "E": "3",
        "I": "1",
        "O": "0",
        "S": "5",
        "T": "7",
    }
)


@strategy
class Leetspeak(Strategy):
    """The message in leetspeak (a→4, e→3, i→1, o→0, s→5, t→7); readable to a model, missed
    by filters that match words. Sent as is (no request to decode: a model reads it)."""

    id = "leetspeak"
    title = "leetspeak"

    @classmethod
    def apply(cls, attack: Attack, tools: StrategyTools) -> Attack | None:
        if attack.context is not None:
            return None
        return attack.model_copy(
            update={"prompt": attack.prompt.translate(LEET), "strategy": cls.id}
        )
