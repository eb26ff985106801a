"""A case's judge metrics ask their independent first questions together (issue 31 goal 5).

Statements, then their verdicts, are dependent calls; the first asks of different metrics
are not. A case used to ask every call one after another (five to seven rounds for the five
RAG metrics); now its judge metrics run together, so the case waits for its longest chain.
The loopback judge below holds the first two requests until both have arrived: asked one
after another, the first would wait alone and fail, so no timing is asserted.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from evalrunner.cli import app
from evalrunner.judge.reply_format import Leaves, schema_instance
from tests.support.judge_stub import JudgeStub, StubReply

LEAVES = Leaves(
    text=lambda name: f"a plausible {name.replace('_', ' ')}",
    items=lambda node: int(node.get("minItems", 2)),
    number=lambda node: float(node.get("maximum", 1)),
)
TWO = ("Contextual Precision", "Contextual Recall")


def held_until_together(parties: int) -> Any:
    """A responder whose first ``parties`` requests each wait (5 s at most) for the others."""
    barrier = threading.Barrier(parties, timeout=5)
    seen = 0
    lock = threading.Lock()

    def answer(messages: list[dict[str, Any]], request: dict[str, Any]) -> StubReply:
        nonlocal seen
        with lock:
            seen += 1
            held = seen <= parties
        if held:
            barrier.wait()  # BrokenBarrierError: the stub answers 400 and the metric errors
        schema = request["response_format"]["json_schema"]["schema"]
        return StubReply(schema_instance(schema, "value", LEAVES))

    return answer


def run_one_case(tmp_path: Path, stub: JudgeStub, metrics: tuple[str, ...]) -> dict[str, Any]:
    suite = tmp_path / "suite.json"
    case = {
        "id": "leave",
        "question": "How many days of annual leave do employees get?",
        "expected_answer": "Employees get 25 days of paid annual leave a year.",
        "actual_answer": "Employees get 25 days of annual leave.",
        "retrieved_contexts": json.dumps(
            ["Employees receive 25 days of paid annual leave.", "Laptops are provided."]
        ),
    }
    suite.write_text(json.dumps({"cases": [case]}), encoding="utf-8")
    judge = {"openai": {"base_url": stub.url, "model": "m"}, "cache": False, "max_retries": 0}
    args = ["run", "--suite", str(suite), "--target", '{"lambdaArn": "evalrunner-demo-hr"}']
    for metric in metrics:
        args += ["--metric", metric]
    args += ["--judge", json.dumps(judge), "--max-concurrency", "1", "--no-preflight"]
    args += ["--out", str(tmp_path / "out"), "--json", "--quiet", "--fail-on", "errors"]
    result = CliRunner().invoke(app, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return dict(json.loads(result.stdout))


def test_one_case_asks_its_metrics_first_questions_together(
    tmp_path: Path, judge_stub: JudgeStub
) -> None:
    judge_stub.responder = held_until_together(len(TWO))
    summary = run_one_case(tmp_path, judge_stub, TWO)
    metrics = {m["metric"]: m for m in summary["metrics"]}
    for name in TWO:
        assert metrics[name]["errored"] == 0, metrics[name]
        assert metrics[name]["count"] == 1
    assert judge_stub.errors == []
    assert judge_stub.max_in_flight >= 2
    # the case's accounting, filled from two threads at once, still counts every request
    assert summary["judge"]["calls"] == len(judge_stub.requests)


def test_the_shared_statements_are_still_asked_once_when_asked_together(
    tmp_path: Path, judge_stub: JudgeStub
) -> None:
    """Faithfulness and Answer Relevancy ask for the same statements at the same moment, with
    no cache: one request (the judge's single flight), not two."""
    asked: list[str] = []

    def answer(messages: list[dict[str, Any]], request: dict[str, Any]) -> StubReply:
        asked.append(request["response_format"]["json_schema"]["name"])
        schema = request["response_format"]["json_schema"]["schema"]
        return StubReply(schema_instance(schema, "value", LEAVES), delay=0.2)

    judge_stub.responder = answer
    summary = run_one_case(tmp_path, judge_stub, ("Faithfulness", "Answer Relevancy"))
    assert {m["errored"] for m in summary["metrics"]} == {0}
    assert asked.count("Statements") == 1, asked
