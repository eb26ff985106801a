"""Planning a red-team run: attacks per plugin with their strategy copies and stable ids; a
plugin the judge fails on is left out with a note, the others go on."""

import pytest

from evalrunner.errors import ConfigError
from evalrunner.judge.base import JudgeError
from evalrunner.judge.scripted import ScriptedJudge
from evalrunner.redteam.plan import build_attacks, choose_strategies
from evalrunner.redteam.plugins import available

PLUGINS = available()


def two(prefix: str) -> dict[str, object]:
    return {"attacks": [{"goal": "g", "prompt": f"{prefix} {n}"} for n in (1, 2, 3)]}


def test_attacks_strategies_and_ids() -> None:
    judge = ScriptedJudge({"red team: jailbreak attacks": two("jb")})
    made = build_attacks(
        judge,
        purpose="HR",
        plugins=[PLUGINS["jailbreak"]],
        strategies=choose_strategies("rot13,base64"),
        num_tests=2,
        seed=1,
    )
    assert [case for case, _ in made.attacks] == [
        "jailbreak-01",
        "jailbreak-01~rot13",  # in the order they were named
        "jailbreak-01~base64",
        "jailbreak-02",
        "jailbreak-02~rot13",
        "jailbreak-02~base64",
    ]
    assert made.notes == []


def test_a_plugin_the_judge_fails_on_is_noted_and_the_rest_run() -> None:
    judge = ScriptedJudge({"red team: off-topic attacks": two("ot")})  # nothing for jailbreak
    made = build_attacks(
        judge,
        purpose="HR",
        plugins=[PLUGINS["jailbreak"], PLUGINS["off-topic"]],
        strategies=[],
        num_tests=3,
        seed=1,
    )
    assert [case for case, _ in made.attacks] == ["off-topic-01", "off-topic-02", "off-topic-03"]
    assert len(made.notes) == 1 and made.notes[0].startswith("jailbreak: the judge could not")


def test_no_attack_at_all_is_an_error() -> None:
    with pytest.raises(JudgeError, match="wrote no attack"):
        build_attacks(
            ScriptedJudge({}),
            purpose="HR",
            plugins=[PLUGINS["jailbreak"]],
            strategies=[],
            num_tests=1,
            seed=1,
        )


def test_bounds_and_names() -> None:
    with pytest.raises(ConfigError, match="--num-tests"):
        build_attacks(
            ScriptedJudge({}), purpose="HR", plugins=[], strategies=[], num_tests=0, seed=1
        )
    with pytest.raises(ConfigError, match="choose from base64, language"):
        choose_strategies(["base64", "morse"])
