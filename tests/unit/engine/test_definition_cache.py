"""The parsed state machine is made once per process (issue 18), each caller given its own
copy, and kept in memory only: nothing is written under the user's cache folder (issue 30)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import state_machines
from evalrunner.engine.definition_cache import DefinitionCache
from evalrunner.engine.local import LocalEngine
from evalrunner.engine.run_types import PIPELINE_FUNCTIONS


class Program:
    """Stands in for moto's program: any picklable object graph."""

    def __init__(self, definition: str) -> None:
        self.states = json.loads(definition)["States"]


def toy_parser(calls: list[str]):
    def parse(definition: str) -> tuple[Program, str]:
        calls.append(definition)
        json.loads(definition)  # an invalid definition raises, as moto's parser does
        return Program(definition), "tree"

    return parse


DEFINITION = json.dumps({"StartAt": "P", "States": {"P": {"Type": "Pass", "End": True}}})


def test_parsed_once_and_every_caller_gets_its_own_copy():
    calls: list[str] = []
    cache = DefinitionCache(toy_parser(calls))
    first, tree = cache.parse(DEFINITION)
    second, no_tree = cache.parse(DEFINITION)
    third, _ = cache.parse(DEFINITION)
    assert calls == [DEFINITION] and cache.parses == 1
    assert (tree, no_tree) == ("tree", None)
    assert first is not second and first.states is not second.states
    assert second is not third and second.states is not third.states
    assert first.states == second.states == third.states


def test_another_definition_is_parsed_on_its_own():
    calls: list[str] = []
    cache = DefinitionCache(toy_parser(calls))
    other = json.dumps({"StartAt": "Q", "States": {"Q": {"Type": "Succeed"}}})
    cache.parse(DEFINITION)
    program, _ = cache.parse(other)
    assert calls == [DEFINITION, other] and program.states == {"Q": {"Type": "Succeed"}}


def test_an_invalid_definition_raises_every_time_and_is_not_kept():
    calls: list[str] = []
    cache = DefinitionCache(toy_parser(calls))
    for _ in range(2):
        with pytest.raises(json.JSONDecodeError):
            cache.parse("{not json")
    assert len(calls) == 2


def test_the_pipeline_definition_round_trips_through_moto_parser():
    """moto's program for the real definition is kept, and the copy handed out is the same
    program as a fresh parse."""
    from moto.stepfunctions.parser.asl.parse.asl_parser import AmazonStateLanguageParser

    definition = state_machines.substitute(
        state_machines.test_runner_asl(),
        {
            **{p: "arn:aws:lambda:us-east-1:123456789012:function:f" for p in PIPELINE_FUNCTIONS},
            "ChildExecutionType": "STANDARD",
            "BatchScoringEnabled": "false",
            "BatchScoringMinItems": "0",
            "BatchScoringTimeoutSeconds": "3600",
            "BatchJobQueueArn": "arn:aws:batch:us-east-1:123456789012:job-queue/q",
            "BatchJobDefinitionArn": "arn:aws:batch:us-east-1:123456789012:job-definition/d:1",
        },
    )
    cache = DefinitionCache(AmazonStateLanguageParser.parse)
    cache.parse(definition)
    program, tree = cache.parse(definition)
    assert cache.parses == 1 and tree is None
    fresh, _ = AmazonStateLanguageParser.parse(definition)
    assert _shape(program) == _shape(fresh)


def _shape(value: object, depth: int = 0) -> object:
    """A program's structure: each component's type and attributes, recursively (pickles
    of equal programs may differ in which equal strings they share)."""
    assert depth < 200
    if isinstance(value, list | tuple):
        return [_shape(v, depth + 1) for v in value]
    if isinstance(value, dict):
        return {k: _shape(v, depth + 1) for k, v in value.items()}
    if hasattr(value, "__dict__") and not isinstance(value, type):
        return (type(value).__qualname__, _shape(vars(value), depth + 1))
    return value


def test_a_local_run_writes_nothing_under_the_users_cache(monkeypatch, tmp_path: Path):
    """Two runs in one process parse the definition once between them, and neither leaves a
    file in the user's cache folder (the on-disk pickles are gone: issue 30)."""
    from moto.stepfunctions.parser.asl.parse.asl_parser import AmazonStateLanguageParser

    from evalrunner.engine import moto_compat
    from lambdas.local import local_pipeline

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    parsed: list[str] = []
    original = AmazonStateLanguageParser.__dict__["parse"].__func__

    def counting(definition: str):
        parsed.append(definition)
        return original(definition)

    monkeypatch.setattr(moto_compat, "_definition_cache", [DefinitionCache(counting)])
    engine = LocalEngine(pipeline=local_pipeline, extra_functions={"t": lambda e, c: "42 days"})
    for n in range(2):
        engine.run(
            {"key": "test-suites/f.csv", "iterations": 1, "target": {"lambdaArn": "t"}},
            suite=b"id,question,expected_answer\nc1,How long?,42 days\n",
            out_dir=tmp_path / f"out{n}",
        )
    assert len(parsed) == 1
    assert not (tmp_path / "cache").exists() or not list((tmp_path / "cache").rglob("*"))
