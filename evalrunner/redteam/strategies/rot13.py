"""ROT13: the attack's letters rotated by 13, a cipher any model can undo."""

from __future__ import annotations

import codecs

from evalrunner.redteam.model import Attack
from evalrunner.redteam.strategies.base import Strategy, StrategyTools, encoded, strategy


@strategy
class Rot13(Strategy):
    """The message in ROT13, with a request to decode it and answer."""

    id = "rot13"
    title = "ROT13 cipher"

    @classmethod
    def apply(cls, attack: Attack, tools: StrategyTools) -> Attack | None:
        return encoded(attack, cls.id, codecs.encode(attack.prompt, "rot13"), "ROT13")
