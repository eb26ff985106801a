"""What the Distributed Map collects into its state (issue 29, item 6): the array of every
child execution's output, which Step Functions caps at 256 KiB (goal here: 64 KiB).

The child executions are the definition's own ItemProcessor states, run in the embedded
interpreter on a small suite (one case per task, one task crashed so that RecordFailure's end
is measured too) with RunCases' ResultPath edited to keep the array; then, for 2,000 and
10,000 cases at max_concurrency 10, 200 and 1000, the Map items Prepare would cut
(``cases_per_task`` chosen automatically) and the bytes of the array those children would
collect: each child's output is measured, and for children whose output names their item,
recomputed with each item's own numbers.

Usage: PYTHONPATH=. python bench/bench_map_result.py [--definition PATH]
(``--definition``: another ASL file, e.g. the one before this change:
``git show 995fc13:state_machines/test_runner.asl.json > /tmp/before.asl.json``).
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path
from typing import Any

import state_machines
from evalrunner.event import parse_event
from evalrunner.pipeline.batching import batches, cases_per_task
from tests.support.map_collect import collect_map_outputs

CASES = 24
CRASHED_TASK = 5
LIMIT = 256 * 1024


def _target(event: dict[str, Any], context: Any) -> dict[str, Any]:
    return {"answer": "Employees get 25 days.", "contexts": ["leave policy"]}


def child_outputs(definition: str) -> list[Any]:
    """The array the Map collected over a :data:`CASES`-item run of ``definition``."""
    with tempfile.TemporaryDirectory() as out:
        _, array = collect_map_outputs(
            definition, _target, Path(out), cases=CASES, crashed_task=CRASHED_TASK
        )
    return array


def _compact(value: Any) -> int:
    return len(json.dumps(value, separators=(",", ":")).encode())


def collected_bytes(example: Any, cases: int, concurrency: int) -> tuple[int, int]:
    """(Map items, bytes of the collected array) for ``cases`` cases at ``concurrency``."""
    event = parse_event(
        {
            "key": "test-suites/big.csv",
            "iterations": 1,
            "target": {"lambdaArn": "bench-target"},
            "max_concurrency": concurrency,
        }
    )
    items = batches(cases, cases_per_task(event, cases))
    total = 2 + max(0, len(items) - 1)  # brackets and commas
    for batch in items:
        child = example
        if isinstance(example, dict) and "item" in example:
            child = {**example, "item": {"first": batch.first, "count": batch.count}}
        total += _compact(child)
    return len(items), total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--definition", type=Path, help="ASL file (default: the tree's)")
    args = parser.parse_args()
    text = args.definition.read_text() if args.definition else state_machines.test_runner_asl()
    outputs = child_outputs(text)
    sizes = sorted({_compact(o) for o in outputs})
    print(f"{len(outputs)} children measured; output sizes (bytes): {sizes}")
    example = max(outputs, key=_compact)
    print("| cases | max_concurrency | Map items | collected | of 256 KiB |")
    print("|---:|---:|---:|---:|---:|")
    for cases in (2_000, 10_000):
        for concurrency in (10, 200, 1000):
            items, size = collected_bytes(example, cases, concurrency)
            print(
                f"| {cases:,} | {concurrency} | {items:,} | {size / 1024:,.1f} KiB | "
                f"{size / LIMIT:.0%} |"
            )


if __name__ == "__main__":
    main()
