"""The dry judge: a valid reply for every reply schema the judge metrics ask for, counted as
the real clients count (the reply-format line included, identical asks cached)."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import pytest
from pydantic import BaseModel

import evalrunner.evaluators as evaluators_package
import evalrunner.judge as judge_package
from evalrunner.estimate.dry_judge import DryJudge, count_tokens, dry_reply
from evalrunner.judge.base import CURRENT_CASE, CaseUsage, Message
from evalrunner.judge.extract import JudgedTexts, Verdicts, counted

NOT_REPLIES = (
    "evalrunner.judge.config",
    "evalrunner.judge.lifecycle",
    "evalrunner.evaluators.judge_metrics",  # a run's declared judge metrics, not a reply
)


def _reply_schemas() -> list[type[BaseModel]]:
    """Every pydantic model the judge's extraction and the judge evaluators define, but
    their options, the judge's configuration, the declared judge metrics and the Bedrock
    lifecycle table (settings and data, not replies)."""
    found: dict[str, type[BaseModel]] = {}
    for package in (judge_package, evaluators_package):
        for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
            if "judge" not in info.name or info.name in NOT_REPLIES:
                continue
            module = importlib.import_module(info.name)
            for _, cls in inspect.getmembers(module, inspect.isclass):
                if (
                    issubclass(cls, BaseModel)
                    and cls.__module__ == module.__name__
                    and not cls.__name__.endswith("Options")
                ):
                    found[f"{cls.__module__}.{cls.__qualname__}"] = cls
    return list(found.values())


SCHEMAS = _reply_schemas()


def test_there_are_reply_schemas_to_check() -> None:
    names = {s.__name__ for s in SCHEMAS}
    assert {"Verdicts", "Statements", "JudgedTexts"} <= names


@pytest.mark.parametrize("schema", SCHEMAS, ids=lambda s: f"{s.__module__}.{s.__name__}")
def test_every_schema_gets_a_reply_that_validates(schema: type[BaseModel]) -> None:
    assert isinstance(dry_reply(schema), schema)


def test_a_list_the_prompt_fixes_gets_that_many_entries() -> None:
    assert len(dry_reply(counted(Verdicts, verdicts=5)).verdicts) == 5
    assert len(dry_reply(counted(JudgedTexts, texts=2)).texts) == 2  # type: ignore[attr-defined]


def test_calls_and_tokens_are_counted_per_run_and_per_case_and_repeats_are_cached() -> None:
    judge = DryJudge()
    messages = [Message(role="user", content="Is the sky blue? Answer with verdicts.")]
    case = CaseUsage()
    token = CURRENT_CASE.set(case)
    try:
        first = judge.ask(messages, Verdicts, purpose="verdicts")
        again = judge.ask(messages, Verdicts, purpose="verdicts")
    finally:
        CURRENT_CASE.reset(token)
    assert not first.cached and again.cached
    assert judge.usage.calls == 1 and judge.usage.cached == 1
    assert case.usage.calls == 1 and case.by_purpose == {"verdicts": 1}
    # what is sent includes the reply-format line the clients add to the prompt
    assert judge.usage.input_tokens > count_tokens(messages[0].content)
    assert judge.usage.output_tokens > 0


def test_tokens_are_counted_as_word_pieces_and_punctuation() -> None:
    assert count_tokens("") == 0
    assert count_tokens("the cat sat") == 3
    assert count_tokens('{"a": 1}') == 7  # { " a " : 1 }
    assert count_tokens("internationalisation") == 4  # 20 letters, pieces of 6
