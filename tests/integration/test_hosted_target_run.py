"""Whole runs against a target the engine hosts make no Lambda call through moto (issue 18):
the target's invocations go to its handler in-process, the pipeline's own tasks too, so moto's
Lambda responses (the HTTP layer boto3 talks to inside the mock) see no invoke at all, while
every case keeps its answer or its target error as before."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import evalrunner
from evalrunner.engine import LocalEngine
from lambdas.local import local_pipeline

from .conftest import SUITE_CSV, echo_target, read_csv

pytestmark = pytest.mark.slow


def test_an_engine_run_invokes_its_hosted_target_in_process(
    tmp_path: Path, moto_invokes: list[str]
) -> None:
    """The target named by a qualified ARN, as a user may write it: every case reaches the
    handler (the failing one is the target error it always was) and nothing crosses moto."""
    asked: list[str] = []

    def target(event: dict[str, Any], context: Any) -> Any:
        asked.append(event["question"])
        return echo_target(event, context)

    engine = LocalEngine(
        pipeline=local_pipeline, extra_functions={"echo-target": target}, fast=True
    )
    event = {
        "key": "test-suites/mini.csv",
        "iterations": 2,
        "target": {"lambdaArn": "arn:aws:lambda:us-east-1:123456789012:function:echo-target:live"},
        "metrics": ["Rouge Metric", "Exact match"],
    }
    result = engine.run(event, suite=SUITE_CSV.encode(), out_dir=tmp_path)
    assert moto_invokes == []
    assert len(asked) == 8 and len(set(asked)) == 4
    rows = read_csv(next(p for p in result.files if p.name.endswith("details.csv")))
    assert len(rows) == 8
    for row in rows:
        if row["case_id"] == "c3":
            assert row["status"] == "target_error"
            assert "raised RuntimeError: the target blew up on purpose" in row["error"]
        else:
            assert row["status"] == "ok", row
    leave = next(r for r in rows if r["case_id"] == "c1")
    assert leave["answer"] == "Employees get 25 days of annual leave."


def test_a_python_function_target_is_called_without_moto(
    tmp_path: Path, moto_invokes: list[str]
) -> None:
    """The Python API's function target (hosted by the engine under its own name)."""

    def policy_bot(question: str) -> tuple[str, list[str]]:
        if "refuse" in question:
            raise ValueError("no answer for that")
        return f"About {question}: 25 days.", ["Policy §4"]

    run = evalrunner.evaluate(
        suite=[
            {"question": "annual leave", "expected_answer": "25 days."},
            {"question": "please refuse", "expected_answer": "Nothing."},
        ],
        target=policy_bot,
        metrics=["Exact match"],
        out=tmp_path,
    )
    assert moto_invokes == []
    by_question = {row["question"]: row for _, row in run.details.iterrows()}
    assert by_question["annual leave"]["answer"] == "About annual leave: 25 days."
    assert by_question["annual leave"]["status"] == "ok"
    assert by_question["please refuse"]["status"] == "target_error"
    assert "no answer for that" in by_question["please refuse"]["error"]
