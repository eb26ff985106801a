"""The pre-flight probes only what the run will call: the judge when a metric or a
perturbation uses it, the target unless the answers are logged or the function runs in
this process; and any reply from the judge, even one that does not parse, is a live judge."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from evalrunner.launch import settled_suite
from evalrunner.preflight import PreflightFailed, preflight, probe_judge

SUITE = "question,expected_answer,answer_from_system\nHow many days?,25 days,25 days\n"


def settled(tmp_path: Path, **event: Any) -> Any:
    path = tmp_path / "s.csv"
    path.write_text(SUITE, "utf-8")
    return settled_suite(path, {"key": "test-suites/s.csv", "iterations": 1, **event})


def stub_judge(judge_stub: Any) -> dict[str, Any]:
    return {"openai": {"base_url": judge_stub.url, "model": "m"}, "max_retries": 0}


def test_a_judge_no_metric_uses_is_not_called(tmp_path: Path, judge_stub: Any) -> None:
    judge_stub.required_key = "sk-never-sent"
    event, suite = settled(
        tmp_path, target={"logged": "bot"}, metrics=["Token F1"], judge=stub_judge(judge_stub)
    )
    preflight(event, suite)  # logged answers, no judge metric: nothing to probe
    assert judge_stub.requests == []
    event, suite = settled(
        tmp_path,
        target={"logged": "bot"},
        metrics=["Answer Relevancy"],
        judge=stub_judge(judge_stub),
    )
    with pytest.raises(PreflightFailed) as info:
        preflight(event, suite)
    assert info.value.what == "judge" and "HTTP 401" in info.value.message
    assert len(judge_stub.requests) == 1


def test_a_function_hosted_in_this_process_is_not_probed(tmp_path: Path) -> None:
    event, suite = settled(tmp_path, target={"lambdaArn": "my-bot"}, metrics=["Token F1"])
    preflight(event, suite, hosted={"my-bot"})  # would call AWS Lambda if probed


def test_any_reply_from_the_judge_proves_it_is_there(judge_stub: Any) -> None:
    judge_stub.responder = lambda messages, request: "I will not answer in JSON."
    probe_judge(stub_judge(judge_stub))
    assert judge_stub.requests  # it was asked, uncached
    body = judge_stub.requests[0].body
    assert json.dumps(body).count("ok") >= 1
