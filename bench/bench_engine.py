"""Embedded-engine overhead: an instant target and lexical metrics only.

Runs N cases through the real state machine in the embedded engine and reports cases/s and
peak RSS (of the whole process so far). Without --warmup the first size is measured cold,
as a CLI user sees it (imports and the first mock start included).
Usage: python bench/bench_engine.py [N ...] [--concurrency C] [--warmup]
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


def suite_csv(n: int) -> bytes:
    lines = ["id,question,expected_answer"]
    lines += [f"c{i},How many days for item {i}?,Item {i} gets 42 days." for i in range(n)]
    return ("\n".join(lines) + "\n").encode()


LEXICAL = ["Rouge Metric", "BLEU", "Token F1", "Exact match"]


def bench(n: int, concurrency: int, metrics: list[str] | None = None) -> dict:
    engine = LocalEngine(pipeline=local_pipeline, extra_functions={"instant": instant_target})
    event = {
        "key": "test-suites/bench.csv",
        "iterations": 1,
        "target": {"lambdaArn": "instant"},
        "max_concurrency": concurrency,
        "metrics": metrics or LEXICAL,
    }
    with tempfile.TemporaryDirectory() as out:
        start, cpu = time.perf_counter(), time.process_time()
        result = engine.run(event, suite=suite_csv(n), out_dir=Path(out))
        seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    assert result.summary.items == n and result.summary.target_errors == 0
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {
        "cases": n,
        "concurrency": concurrency,
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
    args = parser.parse_args()
    if args.warmup:
        bench(20, args.concurrency)
    for n in args.sizes:
        print(json.dumps(bench(n, args.concurrency)), flush=True)
    sys.exit(0)
