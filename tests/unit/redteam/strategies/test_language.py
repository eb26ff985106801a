"""Another language: the judge translates the message and a planted document; the seed picks
the language unless one is given."""

import random

from evalrunner.redteam.model import Attack
from evalrunner.redteam.strategies import StrategyTools, available
from evalrunner.redteam.strategies.language import LANGUAGES

ATTACK = Attack(plugin="indirect-prompt-injection", goal="g", prompt="When?", context="doc")


def translator(calls: list[tuple[str, str]]):  # type: ignore[no-untyped-def]
    def translate(text: str, language: str) -> str:
        calls.append((text, language))
        return f"[{language}] {text}"

    return translate


def test_the_message_and_the_document_are_translated() -> None:
    calls: list[tuple[str, str]] = []
    tools = StrategyTools(random.Random(1), "HR", translator(calls), language="Zulu")
    changed = available()["language"].apply(ATTACK, tools)
    assert changed is not None
    assert (changed.prompt, changed.context, changed.strategy) == (
        "[Zulu] When?",
        "[Zulu] doc",
        "language:Zulu",
    )
    assert calls == [("When?", "Zulu"), ("doc", "Zulu")]


def test_the_seed_picks_the_language() -> None:
    def picked(seed: str) -> str:
        tools = StrategyTools(random.Random(seed), "HR", translator([]))
        changed = available()["language"].apply(ATTACK, tools)
        assert changed is not None
        return changed.strategy.split(":", 1)[1]

    assert picked("7/a") == picked("7/a") and picked("7/a") in LANGUAGES
    assert len({picked(f"7/{n}") for n in range(30)}) > 1
