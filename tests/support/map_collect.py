"""What a Distributed Map collects from its child executions, read off a real run of the
state machine in the embedded engine: the definition's Map gets a ``ResultPath`` so that the
array reaches Aggregate's input, and Aggregate takes it out before running. One Map task (the
one whose first item is ``crashed_task``) crashes, so the Catch path's output is in the array
too. Used by ``tests/integration/test_map_result_size.py`` and ``bench/bench_map_result.py``."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import state_machines
from evalrunner.engine import LocalEngine
from evalrunner.engine.run_types import RunResult
from lambdas.local import local_pipeline

Handler = Callable[[dict[str, Any], Any], Any]


def collect_map_outputs(
    definition: str,
    target: Handler,
    out_dir: Path,
    *,
    cases: int,
    crashed_task: int,
) -> tuple[RunResult, list[Any]]:
    """Run ``cases`` one-case Map tasks of ``definition`` against the hosted ``target``;
    the run's result and the array the Map collected."""
    asl = json.loads(definition)
    asl["States"]["RunCases"]["ResultPath"] = "$.collected"
    seen: list[Any] = []

    def pipeline(runtime: Any, *, log_level: str = "WARNING") -> Any:
        handlers = local_pipeline(runtime, log_level=log_level)

        def run_case(event: dict[str, Any], context: Any) -> Any:
            if "failure" not in event and event["item"]["first"] == crashed_task:
                raise RuntimeError("the task crashed (simulated)")
            return handlers.run_case(event, context)

        def aggregate(event: dict[str, Any], context: Any) -> Any:
            seen.append(event["state"].pop("collected"))
            return handlers.aggregate(event, context)

        return dataclasses.replace(handlers, run_case=run_case, aggregate=aggregate)

    suite = "id,question,expected_answer\n" + "".join(
        f"q{i},How many days of annual leave?,Employees get 25 days.\n" for i in range(cases)
    )
    event = {
        "key": "test-suites/many.csv",
        "iterations": 1,
        "target": {"lambdaArn": "collect-target"},
        "metrics": ["Exact match"],
        "cases_per_task": 1,
        "max_concurrency": 8,
    }
    original = state_machines.test_runner_asl
    state_machines.test_runner_asl = lambda: json.dumps(asl)  # type: ignore[assignment]
    try:
        engine = LocalEngine(pipeline=pipeline, extra_functions={"collect-target": target})
        result = engine.run(event, suite=suite.encode(), out_dir=out_dir)
    finally:
        state_machines.test_runner_asl = original  # type: ignore[assignment]
    (array,) = seen
    return result, list(array)
