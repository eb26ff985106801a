"""base64: the attack sent encoded, past filters that read only plain text."""

from __future__ import annotations

import base64

from evalrunner.redteam.model import Attack
from evalrunner.redteam.strategies.base import Strategy, StrategyTools, encoded, strategy


@strategy
class Base64(Strategy):
    """The message base64-encoded, with a request to decode it and answer."""

    id = "base64"
    title = "base64 encoding"

    @classmethod
    def apply(cls, attack: Attack, tools: StrategyTools) -> Attack | None:
        text = base64.b64encode(attack.prompt.encode("utf-8")).decode("ascii")
        return encoded(attack, cls.id, text, "base64")
