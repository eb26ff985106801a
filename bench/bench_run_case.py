"""CPU per case of ``run_case`` alone: the RunCase step without the engine around it.

Prepares runs of bench_engine's logged suite (answers in the suite, ROUGE + BLEU) in an
embedded S3 reached through the local engine's in-process client, then times ``run_case``
over every item of a fresh run per pass, on the main thread (``time.process_time``), after
20 warm-up cases. ``--profile`` prints a cProfile of one more pass instead.
Usage: PYTHONPATH=. python bench/bench_run_case.py [--cases 2000] [--passes 3] [--profile]
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import boto3
from moto import mock_aws

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_engine import preload, suite_csv

from evalrunner.engine.moto_s3 import InProcessS3Client
from evalrunner.event import read_event
from evalrunner.pipeline import prepare, run_case
from evalrunner.pipeline.context import RunContext
from evalrunner.run import ManifestItem
from evalrunner.storage import RunStore

BUCKET = "bench-bucket"
REGION = "us-east-1"
NOW = datetime(2026, 11, 23, tzinfo=UTC)


def ms_per_case(store: RunStore, run_id: str) -> float:
    items = store.get_json(store.manifest_key(run_id))
    context = RunContext.load(store, run_id)
    for item in items[:20]:
        run_case.run_case(context, ManifestItem.model_validate(item))
    start = time.process_time()
    for item in items:
        run_case.run_case(context, ManifestItem.model_validate(item))
    return (time.process_time() - start) / len(items) * 1000


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cases", type=int, default=2000)
    parser.add_argument("--passes", type=int, default=3)
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()
    preload()
    with mock_aws():
        boto3.client("s3", region_name=REGION).create_bucket(Bucket=BUCKET)
        client = InProcessS3Client(
            lambda: boto3.client("s3", region_name=REGION), account_id="123456789012"
        )
        store = RunStore(BUCKET, client=client)
        store.put_bytes("test-suites/bench.csv", suite_csv(args.cases, True), "text/csv")
        event = {
            "key": "test-suites/bench.csv",
            "target": {"logged": "bench"},
            "metrics": ["Rouge Metric", "BLEU"],
            "iterations": 1,
        }
        runs = [f"bench-{n}" for n in range(args.passes + 1)]
        for run_id in runs:
            prepare.prepare_run(read_event({**event, "run_id": run_id}), store, now=NOW)
        if args.profile:
            profile = cProfile.Profile()
            profile.runcall(ms_per_case, store, runs[0])
            pstats.Stats(profile).sort_stats("tottime").print_stats(30)
            return
        passes = [round(ms_per_case(store, run_id), 4) for run_id in runs[: args.passes]]
        print(f"run_case, CPU ms per case, {args.cases} cases, {args.passes} passes: {passes}")


if __name__ == "__main__":
    main()
