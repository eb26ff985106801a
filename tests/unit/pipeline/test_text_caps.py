"""The text cap: a huge answer is cut once in run_case, flagged, and evaluators (per case,
batched and run-level) never see more than the run's max_text_chars."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import ClassVar

import pytest

from evalrunner.errors import EventError
from evalrunner.evaluators import Input, MetricSpec, Sample, Scored, registry
from evalrunner.evaluators.base import Evaluator, Requirement
from evalrunner.event import read_event
from evalrunner.pipeline import prepare, run_case
from evalrunner.pipeline.context import RunContext
from evalrunner.pipeline.scoring import capped_sample
from evalrunner.run import ManifestItem
from evalrunner.suite.model import TestCase
from evalrunner.targets.base import Target, TargetResponse
from tests.support.suite_bucket import suite_store

SUITE = b"id,question,expected_answer\na,Q one?,alpha\n"
HUGE = "word " * 60_000  # 300,000 characters


def huge(spec, *, session=None):
    return Huge(spec)


class Huge(Target):
    kind = "lambdaArn"

    @property
    def name(self) -> str:
        return "huge"

    def invoke(self, case):
        return TargetResponse(answer=HUGE, contexts=["short", "c" * 5000])


class LengthSpy(Evaluator):
    """Records the longest answer and context it was given."""

    name = "Length spy (test)"
    description = "longest text seen"
    requires = Requirement.NOTHING
    inputs = frozenset({Input.ANSWER})
    metrics = (MetricSpec("Seen length (test)", "chars", primary=True, high=1e9),)
    seen: ClassVar[list[int]] = []

    def score(self, sample: Sample) -> dict[str, Scored]:
        LengthSpy.seen.append(max([len(sample.answer or ""), *map(len, sample.contexts)]))
        return {"Seen length (test)": Scored(float(len(sample.answer or "")), "chars")}


@pytest.fixture
def store(monkeypatch):
    registry.register(LengthSpy)
    with suite_store(SUITE) as store:
        LengthSpy.seen.clear()
        yield store
    registry._REGISTRY.pop(LengthSpy.name)
    registry._LOOKUP.pop(registry._key(LengthSpy.name))


def test_a_huge_answer_is_cut_flagged_and_evaluators_see_only_the_cap(store):
    raw = {
        "key": "test-suites/s.csv",
        "iterations": 1,
        "target": {"lambdaArn": "fn"},
        "metrics": ["Length spy (test)"],
        "max_text_chars": 4000,
        "run_id": "r1",
    }
    prepare.prepare_run(read_event(raw), store, now=datetime(2026, 11, 23, tzinfo=UTC))
    (item,) = store.get_json(store.manifest_key("r1"))
    assert (
        run_case.run_case(
            RunContext.load(store, "r1", target_factory=huge), ManifestItem.model_validate(item)
        ).status
        == "ok"
    )
    record = store.get_json(store.record_key("r1", item["item_id"]))
    assert LengthSpy.seen == [4000]
    assert record["truncated"] is True and record["sanitized"] is False
    assert len(record["response"]["answer"]) == 4000
    assert record["response"]["contexts"] == ["short", "c" * 4000]
    assert record["notes"] == [
        "truncated: answer has 300,000 characters; the first 4,000 were kept and evaluated "
        "(the run's max_text_chars)",
        "truncated: contexts[1] has 5,000 characters; the first 4,000 were kept and evaluated "
        "(the run's max_text_chars)",
    ]


def test_suite_texts_are_capped_for_evaluators_too():
    case = TestCase(index=0, case_id="a", question="q" * 50, expected_answer="e" * 50)
    sample, notes = capped_sample(case, None, 20)
    assert sample.question == "q" * 20 and sample.expected_answer == "e" * 20
    assert [n.split(" has ")[0] for n in notes] == [
        "truncated: question",
        "truncated: expected_answer",
    ]


def test_max_text_chars_is_validated():
    from evalrunner.event import parse_event

    event = {"key": "test-suites/s.csv", "iterations": 1, "target": {"lambdaArn": "fn"}}
    assert parse_event(event).max_text_chars == 100_000
    with pytest.raises(EventError, match="max_text_chars"):
        parse_event({**event, "max_text_chars": 10})
