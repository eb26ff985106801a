"""Aggregate's CPU per case (issue 18): process CPU of ``aggregate_run`` over N records, and
how much of it each report part takes.

Each size: a suite of N cases in an embedded S3 (moto, reached through the engine's
in-process client as a local run's store is), Prepare, every case run through ``run_case``
with an instant in-process target and ROUGE + BLEU (bench_vs_ragas's metrics; untimed), then
``aggregate_run`` timed ``--repeats`` times on the same records. The first pass is what a CLI
run or a cold Lambda pays (templates compiled on first use); later passes are a warm
container's or a long-lived Python API user's. CPU is ``time.process_time`` (all threads);
the parts are the thread CPU of the names ``evalrunner.pipeline.aggregate`` calls, wrapped
in place, so the script runs unchanged on an older tree (copy it there) for side by side.

Usage: PYTHONPATH=. python bench/bench_aggregate_cpu.py [N ...] [--repeats R] [--profile FILE]
       [--save DIR]
(default 2000, 2 repeats; --profile dumps a thread-CPU cProfile of the first pass; --save
writes the last pass's report files to DIR/N/, to compare two trees' reports byte for byte)
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import time
from collections import defaultdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import boto3
from _timing import timed  # bench/ is on sys.path when run as a script
from bench_engine import suite_csv
from moto import mock_aws

import evalrunner.pipeline.aggregate as aggregate
from evalrunner.engine.moto_s3 import InProcessS3Client
from evalrunner.event import read_event
from evalrunner.pipeline import prepare, run_case
from evalrunner.pipeline.context import RunContext
from evalrunner.run import ManifestItem
from evalrunner.storage import RunStore
from evalrunner.targets.base import Target, TargetResponse

NOW = datetime(2026, 11, 22, 9, 30, 5, tzinfo=UTC)
BUCKET = "bench-bucket"
METRICS = ["Rouge Metric", "BLEU"]
#: What aggregate_run calls that writes or feeds the reports (wrapped to time each).
PARTS = [
    "fold_records",
    "compute_stats",
    "find_problems",
    "find_weak_spots",
    "find_insights",
    "to_csv",
    "details_xlsx",
    "render_report",
]


class Instant(Target):
    kind = "lambdaArn"

    @property
    def name(self) -> str:
        return "instant"

    def invoke(self, case: Any) -> TargetResponse:
        return TargetResponse(
            answer=f"The answer to {case.question} is 42 days.",
            contexts=[case.question],
            latency_ms=3.0,
        )


def instant(spec: Any, *, session: Any = None) -> Target:
    return Instant(spec)


def measure(
    n: int, repeats: int, profile: str | None, save: str | None = None
) -> list[dict[str, Any]]:
    spent: dict[str, float] = defaultdict(float)
    for name in PARTS:
        setattr(aggregate, name, timed(name, getattr(aggregate, name), spent))
    out = []
    with mock_aws():
        boto = boto3.client("s3", region_name="us-east-1")
        boto.create_bucket(Bucket=BUCKET)
        boto.put_object(Bucket=BUCKET, Key="test-suites/s.csv", Body=suite_csv(n))
        s3 = InProcessS3Client(
            lambda: boto3.client("s3", region_name="us-east-1"), account_id="123456789012"
        )
        store = RunStore(BUCKET, client=s3)
        event = {"key": "test-suites/s.csv", "iterations": 1, "target": {"lambdaArn": "fn"}}
        prepared = prepare.prepare_run(
            read_event({**event, "metrics": METRICS, "run_id": "r"}), store, now=NOW
        )
        context = RunContext.load(store, "r", target_factory=instant)
        for item in store.get_json(prepared.manifest_key):
            run_case.run_case(context, ManifestItem.model_validate(item))
        for attempt in range(repeats):
            spent.clear()
            profiler = cProfile.Profile(time.thread_time) if profile and attempt == 0 else None
            cpu = time.process_time()
            if profiler:
                profiler.enable()
            summary = aggregate.aggregate_run(RunContext.load(store, "r"), now=NOW)
            if profiler:
                profiler.disable()
                profiler.dump_stats(profile)
            cpu = time.process_time() - cpu
            assert summary.items == n
            out.append(
                {
                    "cases": n,
                    "pass": "cold" if attempt == 0 else "warm",
                    "profiled": profiler is not None,
                    "cpu_s": round(cpu, 3),
                    "cpu_ms_per_case": round(cpu / n * 1000, 3),
                    "parts_s": {k: round(spent[k], 3) for k in PARTS},
                    "load_average": round(os.getloadavg()[0], 2),
                }
            )
        if save:
            folder = Path(save) / str(n)
            folder.mkdir(parents=True, exist_ok=True)
            for key in summary.reports.model_dump().values():
                if key and not key.endswith("manifest.json"):
                    (folder / key.rsplit("/", 1)[-1]).write_bytes(store.get_bytes(key))
    return out


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("sizes", nargs="*", type=int, default=[2000])
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--profile", help="write a thread-CPU cProfile of the first pass here")
    parser.add_argument("--save", help="write the last pass's report files under this folder")
    args = parser.parse_args()
    for size in args.sizes:
        for row in measure(size, args.repeats, args.profile, args.save):
            print(json.dumps(row), flush=True)
