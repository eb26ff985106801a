"""Scripted conversations through Prepare, run_case and Aggregate on an embedded S3: one Map
item per conversation × iteration, turns played in one session with the target's actual
earlier answers, per-turn and conversation metrics, a failing turn that ends only its own
conversation, and the flattened rows of details.csv."""

from __future__ import annotations

import csv
import io
import re
from datetime import UTC, datetime
from typing import ClassVar

import boto3
import pytest
from moto import mock_aws

from evalrunner.errors import TargetError
from evalrunner.event import read_event
from evalrunner.pipeline import aggregate, prepare, run_case
from evalrunner.pipeline.context import RunContext
from evalrunner.run import CaseRecord, ManifestItem
from evalrunner.storage import RunStore
from evalrunner.suite.model import TestCase
from evalrunner.targets.base import ConversationSession, Target, TargetResponse
from tests.support.conversation_eval import transcript_check

NOW = datetime(2026, 11, 24, 2, 30, 0, tzinfo=UTC)
SUITE = (
    "conversation_id,turn,question,condition,role\n"
    ",,Standalone question?,,\n"
    "mem,1,My name is Ana.,,an HR assistant\n"
    "mem,2,What is my name?,Ana,\n"
    "broken,1,My name is Bo.,,\n"
    "broken,2,boom,,\n"
    "broken,3,What is my name?,Bo,\n"
)


class MemoryTarget(Target):
    """Remembers the name a user gave, per session; ``boom`` fails."""

    kind = "lambdaArn"
    sessions: ClassVar[dict[str, str]] = {}
    calls: ClassVar[list[tuple[str | None, str, int]]] = []

    @property
    def name(self) -> str:
        return "memory"

    def invoke(self, case: TestCase) -> TargetResponse:
        MemoryTarget.calls.append((None, case.question, len(case.conversation)))
        return TargetResponse(answer="A standalone answer.")

    def invoke_turn(self, case: TestCase, session: ConversationSession) -> TargetResponse:
        MemoryTarget.calls.append((session.id, case.question, len(case.conversation)))
        if case.question == "boom":
            raise TargetError("the target fell over")
        said = re.search(r"my name is (\w+)", case.question, re.IGNORECASE)
        if said:
            MemoryTarget.sessions[session.id] = said.group(1)
            return TargetResponse(answer="Nice to meet you.")
        known = MemoryTarget.sessions.get(session.id)
        return TargetResponse(answer=f"You are {known}." if known else "I do not know.")


@pytest.fixture
def store():
    with mock_aws(), transcript_check():
        client = boto3.client("s3", region_name="us-east-1")
        client.create_bucket(Bucket="runner-bucket")
        client.put_object(Bucket="runner-bucket", Key="test-suites/conv.csv", Body=SUITE.encode())
        MemoryTarget.sessions, MemoryTarget.calls = {}, []
        yield RunStore("runner-bucket", client=client)


def _run(store: RunStore, run_id: str, iterations: int = 1) -> list[dict]:
    prepare.prepare_run(
        read_event(
            {
                "key": "test-suites/conv.csv",
                "iterations": iterations,
                "target": {"lambdaArn": "fn"},
                "metrics": ["Text matching", "Transcript check (test)"],
                "run_id": run_id,
            }
        ),
        store,
        now=NOW,
    )
    items = store.get_json(store.manifest_key(run_id))
    for item in items:
        context = RunContext.load(
            store, run_id, target_factory=lambda s, session=None: MemoryTarget(s)
        )
        run_case.run_case(context, ManifestItem.model_validate(item))
    return items


def _record(store: RunStore, run_id: str, item_id: str) -> CaseRecord:
    return CaseRecord.model_validate(store.get_json(store.record_key(run_id, item_id)))


def test_one_map_item_per_conversation_and_iteration(store) -> None:
    items = _run(store, "r1", iterations=2)
    assert [i["item_id"] for i in items] == [
        "c00001-i1", "c00002-i1", "c00003-i1", "c00001-i2", "c00002-i2", "c00003-i2",
    ]  # fmt: skip
    sessions = [s for s, *_ in MemoryTarget.calls if s is not None]
    # one session per conversation × iteration, the same for each of its turns
    assert len(set(sessions)) == 4
    assert sessions[0] == sessions[1] != sessions[2]


def test_turns_are_played_in_one_session_with_the_actual_answers(store) -> None:
    _run(store, "r1")
    record = _record(store, "r1", "c00002-i1")
    assert record.status == "ok" and record.session_id
    assert [(t.case_id, t.status) for t in record.turns] == [("mem#1", "ok"), ("mem#2", "ok")]
    assert [t.response.answer for t in record.turns if t.response] == [
        "Nice to meet you.",
        "You are Ana.",
    ]
    # the second turn went out with the first turn and the target's own answer to it
    assert (record.session_id, "What is my name?", 2) in MemoryTarget.calls
    # per-turn metric on the turn that has a condition, nothing on the conversation record
    second = {r.metric: r for r in record.turns[1].results}
    assert second["Model passes"].success is True
    assert "Transcript check" not in second
    (whole,) = record.results
    assert whole.metric == "Transcript check" and whole.score == 1.0
    assert whole.reason == (
        "role an HR assistant; user: My name is Ana. | assistant: Nice to meet you. | "
        "user: What is my name? | assistant: You are Ana."
    )


def test_a_failing_turn_ends_only_its_conversation(store) -> None:
    _run(store, "r1")
    record = _record(store, "r1", "c00003-i1")
    assert record.status == "target_error"
    assert record.error == "turn 2 of 3: the target fell over"
    assert [t.status for t in record.turns] == ["ok", "target_error", "not_run"]
    third = record.turns[2]
    assert third.error == "not run: turn 2 failed, which ended the conversation"
    assert all(r.status == "error" and "not run: turn 2" in r.reason for r in third.results)
    assert ("What is my name?", 4) not in [(q, n) for _, q, n in MemoryTarget.calls]
    (whole,) = record.results
    assert whole.status == "error" and "ended early" in whole.reason
    # the other cases were answered
    assert _record(store, "r1", "c00001-i1").status == "ok"
    assert _record(store, "r1", "c00002-i1").status == "ok"


def test_run_case_of_a_finished_conversation_is_not_played_again(store) -> None:
    items = _run(store, "r1")
    before = len(MemoryTarget.calls)
    context = RunContext.load(store, "r1", target_factory=lambda s, session=None: MemoryTarget(s))
    assert run_case.run_case(context, ManifestItem.model_validate(items[1])).reused is True
    assert len(MemoryTarget.calls) == before


def test_aggregate_flattens_conversations_into_rows(store) -> None:
    _run(store, "r1")
    summary = aggregate.aggregate_run(RunContext.load(store, "r1"), now=NOW)
    # the summary counts run items (a conversation is one), details one row per turn
    assert (summary.items, summary.answered, summary.target_errors) == (3, 2, 1)
    text = store.get_bytes(summary.reports.details).decode("utf-8-sig")
    rows = list(csv.DictReader(io.StringIO(text)))
    assert [(r["case_id"], r["conversation_id"], r["turn"], r["status"]) for r in rows] == [
        ("case-0001", "", "", "ok"),
        ("mem", "mem", "all", "ok"),
        ("mem#1", "mem", "1", "ok"),
        ("mem#2", "mem", "2", "ok"),
        ("broken", "broken", "all", "target_error"),
        ("broken#1", "broken", "1", "ok"),
        ("broken#2", "broken", "2", "target_error"),
        ("broken#3", "broken", "3", "not_run"),
    ]
    whole = rows[1]
    assert whole["answer"].splitlines() == [
        "user: My name is Ana.",
        "assistant: Nice to meet you.",
        "user: What is my name?",
        "assistant: You are Ana.",
    ]
    assert whole["Transcript check score"] == "1.0000"
    assert whole["Model passes reason"] == "not evaluated"  # a per-turn metric
    assert rows[2]["Transcript check reason"] == "not evaluated"  # a conversation metric
    assert rows[3]["Model passes success"] == "true"
    # the broken conversation says which turn ended it, on its own row and on the turn not run
    assert "ended early (not run: turn 2 failed" in rows[4]["Transcript check reason"]
    assert rows[7]["Model passes reason"].startswith("not scored: not run: turn 2 failed")
    # conversation metrics over conversations, per-turn metrics over turns
    by_metric = {m.metric: m for m in summary.metrics}
    assert by_metric["Transcript check"].count == 1 and by_metric["Transcript check"].errored == 1
    matching = by_metric["Model passes"]
    assert (matching.count, matching.errored) == (1, 2)  # mem#2 scored; broken#3 not run
    problems = {p.type: p for p in summary.problems}
    assert "1 of 6 target calls" in problems["target_errors"].description


def test_prepare_perturbs_single_turn_cases_only(store) -> None:
    prepare.prepare_run(
        read_event(
            {
                "key": "test-suites/conv.csv",
                "iterations": 1,
                "target": {"lambdaArn": "fn"},
                "metrics": ["Text matching"],
                "perturbations": [{"kind": "typos", "intensity": 1.0}],
                "run_id": "rp",
            }
        ),
        store,
        now=NOW,
    )
    items = store.get_json(store.manifest_key("rp"))
    assert [i["item_id"] for i in items] == ["c00001-i1", "c00001-p1-i1", "c00002-i1", "c00003-i1"]
