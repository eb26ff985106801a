"""The judged agent metrics in a run through the embedded engine, judged by the loopback
OpenAI-compatible stub: Task completion on the worked example of docs/conversation_metrics.md,
and Argument correctness with ``judged: true`` asking the judge only about the values that
differ. The run builds the judge for Argument correctness only because the option asks."""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import Any

from evalrunner.engine import LocalEngine
from lambdas.local import local_pipeline
from tests.support.judge_stub import JudgeStub

SUITE = (
    "id,question,expected_steps\n"
    "sick,Book 2 days of annual leave from May 4 for employee 4411,"
    '"[{""name"": ""hr/book_leave"", ""arguments"": '
    '{""employee"": 4411, ""days"": 2, ""start"": ""2026-05-04"", ""type"": ""annual""}}]"\n'
)


def agent(event: dict[str, Any], context: Any) -> dict[str, Any]:
    """Books the right days as the wrong kind of leave, and says it is done."""
    steps = [
        {"name": "hr/get_balance", "args": {"employee": 4411}, "output": "12"},
        {
            "name": "hr/book_leave",
            "args": {"employee": "4411", "days": 2, "start": "May 4, 2026", "type": "sick"},
            "output": "booked",
        },
    ]
    return {"reply": "Done, 2 days booked.", "trace": steps}


def judge(messages: list[dict[str, Any]], request: dict[str, Any]) -> Any:
    prompt = messages[-1]["content"]
    if "State the task the user wanted done" in prompt:
        assert "hr/book_leave" in prompt and "returned: booked" in prompt
        return {
            "task": "book 2 days of annual leave from May 4 for employee 4411",
            "outcome": "booked 2 days of sick leave",
            "reason": "the leave type is wrong",
            "score": 0.3,
        }
    if "<argument id=" in prompt:
        assert prompt.count("<argument id=") == 2  # start and type; employee 4411 = "4411"
        return {
            "verdicts": [
                {"reason": "the same date", "verdict": True},
                {"reason": "sick leave is not annual leave", "verdict": False},
            ]
        }
    raise AssertionError(f"unexpected prompt: {prompt[:200]}")


def test_task_completion_and_judged_arguments_through_the_stub_judge(
    tmp_path: Path, judge_stub: JudgeStub
) -> None:
    judge_stub.responder = judge
    event = {
        "key": "test-suites/agent.csv",
        "iterations": 1,
        "target": {"lambdaArn": "hr-agent", "answer_path": "reply", "steps_path": "trace"},
        "metrics": ["Task completion", "Argument correctness"],
        "evaluator_options": {"Argument correctness": {"judged": True}},
        "judge": {
            "openai": {"base_url": judge_stub.url, "model": "stub-judge"},
            "cache_dir": str(tmp_path / "judge-cache"),
            "max_retries": 1,
        },
    }
    engine = LocalEngine(pipeline=local_pipeline, extra_functions={"hr-agent": agent})
    result = engine.run(event, suite=SUITE.encode(), out_dir=tmp_path / "out")
    details = next(f for f in result.files if f.name.endswith("details.csv"))
    (row,) = csv.DictReader(io.StringIO(details.read_text("utf-8-sig")))
    assert (row["Task completion score"], row["Task completion success"]) == ("0.3000", "false")
    assert row["Task completion reason"] == (
        'task: "book 2 days of annual leave from May 4 for employee 4411"; outcome: "booked 2 '
        'days of sick leave"; the leave type is wrong'
    )
    assert row["Argument correctness score"] == "0.7500"  # employee, days, start of 4
    assert row["Argument correctness reason"] == (
        'hr/book_leave: type = "sick", expected "annual" (judge: sick leave is not annual leave)'
    )
    assert len(judge_stub.requests) == 2
    totals = result.summary.judge
    assert totals is not None and (totals.calls, totals.parse_failures) == (2, 0)


def test_judged_arguments_without_a_judge_are_skipped_and_reported_as_a_problem(
    tmp_path: Path,
) -> None:
    # tests/conftest.py leaves no default judge (EVALRUNNER_JUDGE unset, an empty config)
    event = {
        "key": "test-suites/agent.csv",
        "iterations": 1,
        "target": {"lambdaArn": "hr-agent", "answer_path": "reply", "steps_path": "trace"},
        "metrics": ["Argument correctness"],
        "evaluator_options": {"Argument correctness": {"judged": True}},
    }
    engine = LocalEngine(pipeline=local_pipeline, extra_functions={"hr-agent": agent})
    result = engine.run(event, suite=SUITE.encode(), out_dir=tmp_path / "out")
    details = next(f for f in result.files if f.name.endswith("details.csv"))
    (row,) = csv.DictReader(io.StringIO(details.read_text("utf-8-sig")))
    assert row["Argument correctness reason"].startswith("skipped: judged: true needs a judge")
    (problem,) = [p for p in result.summary.problems if p.type == "judge_not_configured"]
    assert "Argument correctness" in problem.description


def test_judged_arguments_alone_count_their_judge_calls(
    tmp_path: Path, judge_stub: JudgeStub
) -> None:
    """A run whose only judge user is Argument correctness with ``judged: true`` still
    records each case's judge usage, so the run's judge totals (and its cost) are not 0."""
    judge_stub.responder = judge
    event = {
        "key": "test-suites/agent.csv",
        "iterations": 1,
        "target": {"lambdaArn": "hr-agent", "answer_path": "reply", "steps_path": "trace"},
        "metrics": ["Argument correctness"],
        "evaluator_options": {"Argument correctness": {"judged": True}},
        "judge": {"openai": {"base_url": judge_stub.url, "model": "stub-judge"}, "cache": False},
    }
    engine = LocalEngine(pipeline=local_pipeline, extra_functions={"hr-agent": agent})
    result = engine.run(event, suite=SUITE.encode(), out_dir=tmp_path / "out")
    assert len(judge_stub.requests) == 1
    totals = result.summary.judge
    assert totals is not None and (totals.calls, totals.cases) == (1, 1)
