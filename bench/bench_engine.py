"""Embedded-engine overhead: an instant target and lexical metrics only.

Runs N cases through the real state machine in the embedded engine and reports cases/s and
peak RSS (of the whole process so far). Without --warmup the first size is measured cold,
as a CLI user sees it (imports and the first mock start included).
Usage: python bench/bench_engine.py [N ...] [--concurrency C] [--warmup] [--logged]
       [--cases-per-task K] [--seams on|off]
--seams off: the engine's moto speed seams off (LocalEngine(fast=False)), every AWS call
through botocore and moto's HTTP layer (default: EVALRUNNER_ENGINE_FAST, else on).
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import tempfile
import time
from pathlib import Path

from evalrunner.engine import LocalEngine
from lambdas.local import local_pipeline


def instant_target(event, context):
    question = event["question"]
    return {"answer": f"The answer to {question} is 42 days.", "contexts": [question]}


def suite_csv(n: int, logged: bool = False) -> bytes:
    """N cases; ``logged``: each with the answer the instant target gives, in the
    actual_answer column, so that the run calls nothing (the ``logged`` target)."""
    if logged:
        lines = ["id,question,expected_answer,actual_answer"]
        lines += [
            f"c{i},How many days for item {i}?,Item {i} gets 42 days.,"
            f"The answer to How many days for item {i}? is 42 days."
            for i in range(n)
        ]
    else:
        lines = ["id,question,expected_answer"]
        lines += [f"c{i},How many days for item {i}?,Item {i} gets 42 days." for i in range(n)]
    return ("\n".join(lines) + "\n").encode()


def preload() -> float:
    """Import what a run imports on first use (every evaluator module, with rouge-score's
    nltk; moto's Step Functions interpreter); the seconds it took. For comparisons that
    count a peer's imports apart (bench_vs_ragas)."""
    start = time.perf_counter()
    import moto.stepfunctions.parser.models  # noqa: F401

    from evalrunner.evaluators import registry

    registry.available()
    return time.perf_counter() - start


LEXICAL = ["Rouge Metric", "BLEU", "Token F1", "Exact match"]


def bench(
    n: int,
    concurrency: int,
    metrics: list[str] | None = None,
    *,
    logged: bool = False,
    cases_per_task: int | None = None,
    fast: bool | None = None,
) -> dict:
    engine = LocalEngine(
        pipeline=local_pipeline, extra_functions={"instant": instant_target}, fast=fast
    )
    event = {
        "key": "test-suites/bench.csv",
        "iterations": 1,
        "target": {"logged": "bench"} if logged else {"lambdaArn": "instant"},
        "max_concurrency": concurrency,
        "metrics": metrics or LEXICAL,
    }
    if cases_per_task is not None:
        event["cases_per_task"] = cases_per_task
    with tempfile.TemporaryDirectory() as out:
        start, cpu = time.perf_counter(), time.process_time()
        result = engine.run(event, suite=suite_csv(n, logged), out_dir=Path(out))
        seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    assert result.summary.items == n and result.summary.target_errors == 0
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {
        "cases": n,
        "concurrency": concurrency,
        "target": "logged" if logged else "instant Lambda",
        "cases_per_task": cases_per_task or "auto",
        "seams": "on" if engine.fast else "off",
        "seconds": round(seconds, 2),
        "cases_per_s": round(n / seconds, 1),
        "cpu_seconds": round(cpu, 2),
        "peak_rss_mib": round(peak_mib),
        "mean_scores": {
            m.metric: round(m.average, 4)
            for m in result.summary.metrics
            if m.iteration is None and m.average is not None
        },
    }


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("sizes", nargs="*", type=int, default=[200, 2000])
    parser.add_argument("--concurrency", type=int, default=10)
    parser.add_argument(
        "--warmup", action="store_true", help="run 20 cases first (imports, first mock start)"
    )
    parser.add_argument(
        "--logged", action="store_true", help="the answers in the suite: no target call"
    )
    parser.add_argument("--cases-per-task", type=int, help="default: the run's own choice")
    parser.add_argument("--seams", choices=["on", "off"], help="the moto speed seams' switch")
    args = parser.parse_args()
    fast = None if args.seams is None else args.seams == "on"
    if args.warmup:
        bench(20, args.concurrency, fast=fast)
    for n in args.sizes:
        result = bench(
            n,
            args.concurrency,
            logged=args.logged,
            cases_per_task=args.cases_per_task,
            fast=fast,
        )
        print(json.dumps(result), flush=True)
    sys.exit(0)
