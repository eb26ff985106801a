"""Every recorded event is accepted or refused exactly as when it was recorded, with the same
messages: the guard that lets the event's definition move (issue 12) without changing what
users can send or what they are told.

``data/event_fixtures.json`` was recorded with the code before the move: the events found in
the tests, README and design notes, the seed-003 style legacy events, and mutations of every
field of every target kind. Regenerate it only for a deliberate change of the contract.
"""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import pytest

from evalrunner.errors import EventError
from evalrunner.event import parse_event
from evalrunner.targets.registry import available

FIXTURES = json.loads((Path(__file__).parent / "data" / "event_fixtures.json").read_text("utf-8"))


_NAME_LIST = re.compile(r"((?:Valid names|valid names|selected): )(.*?)(\.?)$")


def _ordered(problem: str) -> str:
    """Lists of evaluator names follow the evaluator registry's order, which depends on which
    test imported an evaluator module first: compared as sets."""
    return _NAME_LIST.sub(lambda m: m[1] + ", ".join(sorted(m[2].split(", "))) + m[3], problem)


def _id(fixture: dict[str, Any]) -> str:
    return json.dumps(fixture["event"], sort_keys=True)[:120]


@pytest.mark.parametrize("fixture", FIXTURES, ids=[_id(f) for f in FIXTURES])
def test_recorded_outcome(fixture: dict[str, Any]) -> None:
    raw = copy.deepcopy(fixture["event"])
    if fixture["accepted"]:
        parsed = parse_event(raw)
        assert parsed.target_kind == fixture["target_kind"]
        assert type(parsed.target_spec) is available()[parsed.target_kind].spec_model
        assert sorted(parsed.metrics) == sorted(fixture["metrics"])
    else:
        with pytest.raises(EventError) as info:
            parse_event(raw)
        assert [_ordered(p) for p in info.value.problems] == [
            _ordered(p) for p in fixture["problems"]
        ]


def test_corpus_covers_every_target_kind() -> None:
    kinds = {f["target_kind"] for f in FIXTURES if f["accepted"]}
    assert kinds == {"agentId", "stepFunctionArn", "lambdaArn", "url", "openai", "knowledgeBaseId"}
