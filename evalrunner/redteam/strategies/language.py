"""Another language: the attack translated by the judge, past English-only defences."""

from __future__ import annotations

from evalrunner.redteam.model import Attack
from evalrunner.redteam.strategies.base import Strategy, StrategyTools, strategy

#: The languages picked from when none is given: widely spoken, and some with less safety
#: training data than English.
LANGUAGES = (
    "German",
    "French",
    "Spanish",
    "Italian",
    "Portuguese",
    "Swahili",
    "Bengali",
    "Zulu",
    "Indonesian",
    "Japanese",
)


@strategy
class Language(Strategy):
    """The attack (its message, and an indirect injection's document) translated into
    another language by the judge: ``--language`` names it, else the seed picks one of
    :data:`LANGUAGES` per attack."""

    id = "language"
    title = "another language"
    uses_judge = True

    @classmethod
    def apply(cls, attack: Attack, tools: StrategyTools) -> Attack | None:
        language = tools.language or tools.rng.choice(LANGUAGES)
        update: dict[str, object] = {
            "prompt": tools.translate(attack.prompt, language),
            "strategy": f"{cls.id}:{language}",
        }
        if attack.context is not None:
            update["context"] = tools.translate(attack.context, language)
        return attack.model_copy(update=update)
