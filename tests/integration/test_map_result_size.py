"""Item 6 of issue 29: what the Distributed Map collects stays far below Step Functions'
256 KiB state limit at 10,000 cases x max_concurrency 1000.

Without a ResultWriter, a Distributed Map collects the output of every child execution into
an array in its own state, whatever its ResultPath does with it afterwards. The children are
the definition's own ItemProcessor states: here they run in the embedded interpreter (the
real ASL file, one edit: RunCases' ResultPath keeps the array so that it can be read), on
both of their ends (CasesDone, and RecordFailure after a task crashed), and the array's size
at 10,000 cases follows from Prepare's batching (one Map item per task) and the size of each
child's output, which is the same for every child.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

import state_machines
from evalrunner.engine import LocalEngine
from evalrunner.event import parse_event
from evalrunner.pipeline.batching import batches, cases_per_task
from lambdas.local import local_pipeline

from .conftest import echo_target

pytestmark = pytest.mark.slow

STATE_LIMIT = 256 * 1024  # bytes, Step Functions' payload limit
GOAL = 64 * 1024
CASES = 24
CRASHED_TASK = 5  # the task (its first item) whose Lambda crashes: RecordFailure


def collected_array(size: int) -> int:
    """Bytes of the JSON array of ``size`` empty child outputs (Step Functions counts the
    UTF-8 of the compact JSON)."""
    return len(json.dumps([{}] * size, separators=(",", ":")).encode())


@pytest.fixture(scope="module")
def collected(tmp_path_factory) -> list[Any]:
    asl = json.loads(state_machines.test_runner_asl())
    asl["States"]["RunCases"]["ResultPath"] = "$.collected"
    seen: list[Any] = []

    def pipeline(runtime: Any, *, log_level: str = "WARNING") -> Any:
        handlers = local_pipeline(runtime, log_level=log_level)

        def run_case(event: dict[str, Any], context: Any) -> Any:
            if "failure" not in event and event["item"]["first"] == CRASHED_TASK:
                raise RuntimeError("the task crashed (simulated)")
            return handlers.run_case(event, context)

        def aggregate(event: dict[str, Any], context: Any) -> Any:
            seen.append(event["state"].pop("collected"))
            return handlers.aggregate(event, context)

        return dataclasses.replace(handlers, run_case=run_case, aggregate=aggregate)

    suite = "id,question,expected_answer\n" + "".join(
        f"q{i},How many days of annual leave?,Employees get 25 days.\n" for i in range(CASES)
    )
    patch = pytest.MonkeyPatch()
    patch.setattr(state_machines, "test_runner_asl", lambda: json.dumps(asl))
    try:
        engine = LocalEngine(pipeline=pipeline, extra_functions={"echo-target": echo_target})
        event = {
            "key": "test-suites/many.csv",
            "iterations": 1,
            "target": {"lambdaArn": "echo-target"},
            "metrics": ["Exact match"],
            "cases_per_task": 1,
            "max_concurrency": 8,
        }
        out: Path = tmp_path_factory.mktemp("out")
        result = engine.run(event, suite=suite.encode(), out_dir=out)
    finally:
        patch.undo()
    assert result.summary.items == CASES
    assert result.summary.task_failures == 1  # RecordFailure recorded the crashed task's case
    (array,) = seen
    return list(array)


def test_every_child_outputs_nothing(collected):
    assert len(collected) == CASES  # one per Map item, the crashed task's included
    assert collected == [{}] * CASES


def test_collected_size_at_10000_cases_and_concurrency_1000(collected):
    child = max(len(json.dumps(c, separators=(",", ":")).encode()) for c in collected)
    assert child == 2
    event = parse_event(
        {
            "key": "test-suites/big.csv",
            "iterations": 1,
            "target": {"lambdaArn": "echo-target"},
            "max_concurrency": 1000,
        }
    )
    items = len(batches(10_000, cases_per_task(event, 10_000)))
    assert items == 10_000  # Prepare's automatic choice: one case per task at this width
    size = collected_array(items)
    assert size <= GOAL < STATE_LIMIT
    # The same 10,000 children returning what RunCase's ResultSelector used to pass on
    # (~170 bytes with its input) would have collected more than the state limit.
    before = {
        "run_id": "261126-230050-ab36a4",
        "bucket": "evalrunner-123456789012-eu-west-1",
        "item": {"first": 9999, "count": 1},
        "result": {"done": 1, "errors": 0, "remaining": None},
    }
    assert items * len(json.dumps(before, separators=(",", ":"))) > STATE_LIMIT
