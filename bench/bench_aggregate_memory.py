"""What Aggregate holds as the run grows (issue 18): tracemalloc's peak, above what was held
before it started, while ``aggregate_run`` merges N records and writes the report set.

Each size: a suite of N cases in an embedded S3 (moto), Prepare, every case run through
``run_case`` with an instant in-process target and the lexical metrics of bench_engine.py
(untraced), then Aggregate traced (one frame per allocation). Slow under tracemalloc
(minutes at 8,000); the figures are bytes, not seconds, so machine load does not move them.
Usage: PYTHONPATH=. python bench/bench_aggregate_memory.py [N ...]   (default 2000 8000)
"""

from __future__ import annotations

import json
import sys
import tracemalloc
from datetime import UTC, datetime

import boto3
from moto import mock_aws

from evalrunner.event import read_event
from evalrunner.pipeline import aggregate, prepare, run_case
from evalrunner.pipeline.context import RunContext
from evalrunner.run import ManifestItem
from evalrunner.storage import RunStore
from evalrunner.targets.base import Target, TargetResponse

NOW = datetime(2026, 11, 22, 9, 30, 5, tzinfo=UTC)
BUCKET = "bench-bucket"
METRICS = ["Rouge Metric", "BLEU", "Token F1", "Exact match"]


class Instant(Target):
    kind = "lambdaArn"

    @property
    def name(self) -> str:
        return "instant"

    def invoke(self, case):
        return TargetResponse(
            answer=f"The answer to {case.question} is 42 days.",
            contexts=[case.question],
            latency_ms=3.0,
        )


def instant(spec, *, session=None):
    return Instant(spec)


def measure(n: int) -> dict:
    with mock_aws():
        s3 = boto3.client("s3", region_name="us-east-1")
        s3.create_bucket(Bucket=BUCKET)
        lines = ["id,question,expected_answer"]
        lines += [f"c{i},How many days for item {i}?,Item {i} gets 42 days." for i in range(n)]
        s3.put_object(Bucket=BUCKET, Key="test-suites/s.csv", Body="\n".join(lines).encode())
        store = RunStore(BUCKET, client=s3)
        event = {"key": "test-suites/s.csv", "iterations": 1, "target": {"lambdaArn": "fn"}}
        out = prepare.prepare_run(
            read_event({**event, "metrics": METRICS, "run_id": "r"}), store, now=NOW
        )
        context = RunContext.load(store, "r", target_factory=instant)
        for item in store.get_json(out.manifest_key):
            run_case.run_case(context, ManifestItem.model_validate(item))
        tracemalloc.start()
        start = tracemalloc.get_traced_memory()[0]
        summary = aggregate.aggregate_run(RunContext.load(store, "r"), now=NOW)
        held, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        report = store.get_bytes(summary.reports.report)
    mib = 2**20
    return {
        "cases": n,
        "aggregate_peak_mib": round((peak - start) / mib, 1),
        "peak_kib_per_case": round((peak - start) / n / 1024, 1),
        "held_after_mib": round((held - start) / mib, 1),
        "report_json_mib": round(len(report) / mib, 1),
    }


if __name__ == "__main__":
    for size in [int(a) for a in sys.argv[1:]] or [2000, 8000]:
        print(json.dumps(measure(size)), flush=True)
