"""An agent target through the embedded engine: its steps reach the record and report.json,
Tool correctness names the wrong tool, the sanity check catches a loop, no judge needed."""

from __future__ import annotations

import csv
import io
import json

from evalrunner.engine import LocalEngine
from lambdas.local import local_pipeline

SUITE = (
    "id,question,expected_tools,expected_steps\n"
    'balance,How many days do I have left?,"[""hr/get_balance""]",\n'
    'policy,What is the leave policy?,"[""kb/search""]",'
    '"[{""name"": ""kb/search"", ""arguments"": {""q"": ""Leave""}}]"\n'
    'loop,Book my leave,"[""hr/book""]",'
    '"[{""name"": ""hr/book"", ""arguments"": {""days"": 3}}]"\n'
)


def agent(event, context):
    """An agent that picks the wrong tool for balances and loops when booking."""
    question = event["question"]
    if "left" in question:
        steps = [{"name": "hr/get_policy", "args": {"topic": "leave"}}]
    elif "policy" in question:
        steps = [{"name": "kb/search", "args": {"q": "leave"}, "output": "25 days"}]
    else:
        steps = [{"name": "hr/book", "args": {"days": 2}, "error": "timeout"}] * 3
    return {"reply": "Done.", "trace": steps}


def test_an_agents_steps_are_scored_without_a_judge(tmp_path):
    event = {
        "key": "test-suites/agent.csv",
        "iterations": 1,
        "target": {"lambdaArn": "hr-agent", "answer_path": "reply", "steps_path": "trace"},
        "metrics": ["Tool correctness", "Agent sanity check", "Argument correctness"],
    }
    engine = LocalEngine(pipeline=local_pipeline, extra_functions={"hr-agent": agent})
    result = engine.run(event, suite=SUITE.encode(), out_dir=tmp_path)
    rows = {
        r["case_id"]: r
        for r in csv.DictReader(
            io.StringIO(
                next(f for f in result.files if f.name.endswith("details.csv")).read_text(
                    "utf-8-sig"
                )
            )
        )
    }
    assert rows["policy"]["Tool correctness success"] == "true"
    assert rows["balance"]["Tool correctness success"] == "false"
    assert rows["balance"]["Tool correctness reason"] == (
        "expected hr/get_balance, called hr/get_policy: missing hr/get_balance; extra hr/get_policy"
    )
    assert rows["loop"]["Agent sanity success"] == "false"
    assert "loop: tool hr/book called 3 times" in rows["loop"]["Agent sanity reason"]
    assert "failed step: hr/book (timeout)" in rows["loop"]["Agent sanity reason"]
    assert rows["policy"]["Argument correctness score"] == "1.0000"
    assert rows["loop"]["Argument correctness reason"] == "hr/book: days = 2, expected 3"
    assert rows["balance"]["Argument correctness reason"].startswith("skipped: ")
    report = json.loads(next(f for f in result.files if f.name.endswith("report.json")).read_text())
    by_case = {r["case_id"]: r for r in report["rows"]}
    assert by_case["balance"]["steps"][0]["name"] == "hr/get_policy"
    assert by_case["policy"]["steps"] == [
        {
            "kind": "tool",
            "name": "kb/search",
            "arguments": {"q": "leave"},
            "output": "25 days",
            "failed": False,
            "error": None,
        }
    ]
