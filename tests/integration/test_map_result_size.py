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

import json
from typing import Any

import pytest

import state_machines
from evalrunner.event import parse_event
from evalrunner.pipeline.batching import batches, cases_per_task
from tests.support.map_collect import collect_map_outputs

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
    result, array = collect_map_outputs(
        state_machines.test_runner_asl(),
        echo_target,
        tmp_path_factory.mktemp("out"),
        cases=CASES,
        crashed_task=CRASHED_TASK,
    )
    assert result.summary.items == CASES
    assert result.summary.task_failures == 1  # RecordFailure recorded the crashed task's case
    return array


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
