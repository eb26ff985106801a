"""The parsed state machine is made once per user and moto version (issue 18): kept in memory
and in a private cache folder, each caller given its own copy, and never read from a place
someone else could have written."""

from __future__ import annotations

import json
import pickle
from pathlib import Path

import pytest

import state_machines
from evalrunner.engine.definition_cache import DefinitionCache
from evalrunner.engine.local import PIPELINE_FUNCTIONS, LocalEngine
from evalrunner.engine.moto_compat import MOTO_VERSION


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


def test_parsed_once_and_every_caller_gets_its_own_copy(tmp_path: Path):
    calls: list[str] = []
    cache = DefinitionCache(toy_parser(calls), version="1", folder=tmp_path / "defs")
    first, tree = cache.parse(DEFINITION)
    second, no_tree = cache.parse(DEFINITION)
    assert calls == [DEFINITION] and cache.parses == 1
    assert (tree, no_tree) == ("tree", None)
    assert first is not second and first.states is not second.states
    assert first.states == second.states


def test_a_later_process_reads_the_folder_instead_of_parsing(tmp_path: Path):
    folder = tmp_path / "defs"
    DefinitionCache(toy_parser([]), version="1", folder=folder).parse(DEFINITION)
    (stored,) = folder.glob("*.pickle")
    assert oct(folder.stat().st_mode & 0o777) == oct(0o700)
    calls: list[str] = []
    program, tree = DefinitionCache(toy_parser(calls), version="1", folder=folder).parse(DEFINITION)
    assert calls == [] and tree is None and program.states == {"P": {"Type": "Pass", "End": True}}
    # another moto (or Python) version, or another definition, is another key
    DefinitionCache(toy_parser(calls), version="2", folder=folder).parse(DEFINITION)
    assert calls == [DEFINITION]
    assert len(list(folder.glob("*.pickle"))) == 2 and stored.exists()


def test_a_damaged_file_is_parsed_again_and_replaced(tmp_path: Path):
    folder = tmp_path / "defs"
    DefinitionCache(toy_parser([]), version="1", folder=folder).parse(DEFINITION)
    (stored,) = folder.glob("*.pickle")
    stored.write_bytes(b"\x80\x05 not a pickle")
    calls: list[str] = []
    program, _ = DefinitionCache(toy_parser(calls), version="1", folder=folder).parse(DEFINITION)
    assert calls == [DEFINITION] and isinstance(program, Program)
    assert isinstance(pickle.loads(stored.read_bytes()), Program)


@pytest.mark.parametrize("what", ["folder", "file"])
def test_nothing_is_unpickled_from_a_place_others_may_write(tmp_path: Path, what: str):
    """Unpickling runs code: a folder or file that is group- or world-writable is ignored
    (as Jinja's bytecode cache does), and the definition is parsed."""
    folder = tmp_path / "defs"
    DefinitionCache(toy_parser([]), version="1", folder=folder).parse(DEFINITION)
    (stored,) = folder.glob("*.pickle")
    (folder if what == "folder" else stored).chmod(0o777 if what == "folder" else 0o666)
    calls: list[str] = []
    DefinitionCache(toy_parser(calls), version="1", folder=folder).parse(DEFINITION)
    assert calls == [DEFINITION]


def test_an_invalid_definition_raises_every_time_and_is_not_kept(tmp_path: Path):
    calls: list[str] = []
    cache = DefinitionCache(toy_parser(calls), version="1", folder=tmp_path / "defs")
    for _ in range(2):
        with pytest.raises(json.JSONDecodeError):
            cache.parse("{not json")
    assert len(calls) == 2 and not list((tmp_path / "defs").glob("*.pickle"))


def test_an_unwritable_folder_only_costs_the_parse(tmp_path: Path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    calls: list[str] = []
    cache = DefinitionCache(toy_parser(calls), version="1", folder=blocker / "defs")
    cache.parse(DEFINITION)
    cache.parse(DEFINITION)  # still held in memory
    assert calls == [DEFINITION]


def test_the_pipeline_definition_round_trips_through_moto_parser(tmp_path: Path):
    """moto's program for the real definition pickles, and the copy read back is the same
    program (its pickle, byte for byte)."""
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
    folder = tmp_path / "defs"
    DefinitionCache(AmazonStateLanguageParser.parse, version=MOTO_VERSION, folder=folder).parse(
        definition
    )
    again = DefinitionCache(AmazonStateLanguageParser.parse, version=MOTO_VERSION, folder=folder)
    program, tree = again.parse(definition)
    assert again.parses == 0 and tree is None
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


def test_the_engine_keeps_definitions_in_the_user_cache(monkeypatch, tmp_path: Path):
    from lambdas.local import local_pipeline

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert LocalEngine(pipeline=local_pipeline).definitions == (
        tmp_path / "evalrunner" / "definitions"
    )
    assert LocalEngine(pipeline=local_pipeline, definitions=None).definitions is None
