"""Prepare's CPU per run and the sanitiser's per answer (issue 18): thread CPU of
``prepare_run`` on an N-row suite, and of RunCase's ``sanitized_response`` on N answers.

``is_clean_first``: the same answers through what RunCase could do instead (ask once whether
the whole dump is clean; only on a tree that has ``is_clean``).

Suites (``--suite``): ``logged`` is bench_vs_ragas's (id, question, expected answer and the
logged answer: the run calls no target); ``wide`` is a spreadsheet a team would write: the
same plus retrieved contexts (a JSON array of three chunks), categories, a condition and two
columns the reader does not know (metadata), as xlsx, so the xlsx reader and the list,
condition and metadata cells are timed too. Prepare runs against an embedded S3 (moto,
reached through the engine's in-process client, as a local run's store is), warmed once on a
20-row suite; each repeat is a new run of the same suite. The names Prepare calls are wrapped
in place to time each part, so the script runs unchanged on an older tree (copy it there) for
side by side. ``--save DIR`` writes the last run's manifest, batches and run config, to
compare two trees' outputs byte for byte.

Usage: PYTHONPATH=. python bench/bench_prepare.py [N ...] [--suite logged|wide]
       [--default-metrics] [--repeats R] [--profile FILE] [--save DIR]
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import io
import json
import os
import time
from collections import defaultdict
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import boto3
import openpyxl
from _timing import timed  # bench/ is on sys.path when run as a script
from moto import mock_aws

import evalrunner.pipeline.prepare as prepare
import evalrunner.sanitize as sanitize
from evalrunner.engine.moto_s3 import InProcessS3Client
from evalrunner.event import read_event
from evalrunner.pipeline import scoring
from evalrunner.storage import RunStore
from evalrunner.targets.base import TargetResponse

NOW = datetime(2026, 11, 22, 9, 30, 5, tzinfo=UTC)
BUCKET = "bench-bucket"
METRICS = ["Rouge Metric", "BLEU"]
#: What prepare_run calls, wrapped to time each.
PARTS = ["read_suite", "settle", "expand", "run_estimate"]


def logged_suite(n: int) -> tuple[str, bytes]:
    """bench_engine's ``suite_csv(n, logged=True)``: what bench_vs_ragas runs."""
    lines = ["id,question,expected_answer,actual_answer"]
    lines += [
        f"c{i},How many days for item {i}?,Item {i} gets 42 days.,"
        f"The answer to How many days for item {i}? is 42 days."
        for i in range(n)
    ]
    return "bench.csv", ("\n".join(lines) + "\n").encode()


def wide_suite(n: int) -> tuple[str, bytes]:
    """An xlsx of N rows with list, condition, category and metadata cells."""
    book = openpyxl.Workbook()
    sheet = book.active
    assert sheet is not None
    sheet.append(
        [
            "id",
            "question",
            "expected_answer",
            "actual_answer",
            "retrieved_contexts",
            "categories",
            "condition",
            "owner",
            "reviewed",
        ]
    )
    for i in range(n):
        chunks = [f"Policy {i} section {k}: staff get {40 + k} days of leave." for k in range(3)]
        sheet.append(
            [
                f"w{i}",
                f"How many days of leave for item {i}?",
                f"Item {i} gets 42 days.",
                f"The answer to item {i} is 42 days.",
                json.dumps(chunks),
                "leave, policy",
                '"42" AND "days"',
                f"team {i % 7}",
                i % 3,
            ]
        )
    out = io.BytesIO()
    book.save(out)
    return "wide.xlsx", out.getvalue()


SUITES: dict[str, Callable[[int], tuple[str, bytes]]] = {"logged": logged_suite, "wide": wide_suite}


class GcClock:
    """Thread CPU spent in the cyclic garbage collector, by generation: a run's allocations
    trigger collections that walk every object the process holds (moto's included), so
    Prepare's CPU swings with them; reported apart to tell the two costs apart."""

    def __init__(self) -> None:
        self.spent: dict[int, float] = defaultdict(float)
        self._start = 0.0
        gc.callbacks.append(self)

    def __call__(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._start = time.thread_time()
        else:
            self.spent[info["generation"]] += time.thread_time() - self._start


def responses(n: int) -> list[TargetResponse]:
    """What the instant target of bench_engine answers, N times: clean text, the common case."""
    return [
        TargetResponse(
            answer=f"The answer to How many days for item {i}? is 42 days.",
            contexts=[f"How many days for item {i}?", f"Policy {i}: 42 days."],
            latency_ms=3.0,
        )
        for i in range(n)
    ]


def measure(
    n: int,
    suite: str,
    repeats: int,
    profile: str | None,
    save: str | None,
    default_metrics: bool = False,
) -> list[dict[str, Any]]:
    spent: dict[str, float] = defaultdict(float)
    for name in PARTS:
        setattr(prepare, name, timed(name, getattr(prepare, name), spent))
    name, data = SUITES[suite](n)
    collector = GcClock()
    out = []
    with mock_aws():
        boto = boto3.client("s3", region_name="us-east-1")
        boto.create_bucket(Bucket=BUCKET)
        boto.put_object(Bucket=BUCKET, Key=f"test-suites/{name}", Body=data)
        boto.put_object(Bucket=BUCKET, Key=f"test-suites/warm-{name}", Body=SUITES[suite](20)[1])
        s3 = InProcessS3Client(
            lambda: boto3.client("s3", region_name="us-east-1"), account_id="123456789012"
        )
        store = RunStore(BUCKET, client=s3)
        event: dict[str, Any] = {"iterations": 1, "target": {"logged": "bench"}}
        if not default_metrics:  # else the event names none: Prepare picks those that apply
            event["metrics"] = METRICS
        prepare.prepare_run(
            read_event({**event, "key": f"test-suites/warm-{name}", "run_id": "w"}), store
        )
        for attempt in range(repeats):
            spent.clear()
            collector.spent.clear()
            run_id = f"r{attempt}"
            profiler = (
                cProfile.Profile(time.thread_time) if profile and attempt == repeats - 1 else None
            )
            cpu = time.thread_time()
            if profiler:
                profiler.enable()
            prepared = prepare.prepare_run(
                read_event({**event, "key": f"test-suites/{name}", "run_id": run_id}),
                store,
                now=NOW,
            )
            if profiler:
                profiler.disable()
                profiler.dump_stats(profile)
            cpu = time.thread_time() - cpu
            in_gc = dict(collector.spent)
            assert prepared.item_count == n
            answers = responses(n)
            sanitise = time.thread_time()
            for response in answers:
                scoring.sanitized_response(response)
            sanitise = time.thread_time() - sanitise
            # What RunCase's caller could do (run_case.py is not this bench's): ask once
            # whether the whole dump is clean. Only where the tree has is_clean.
            once = None
            if hasattr(sanitize, "is_clean"):
                once = time.thread_time()
                for response in answers:
                    if not sanitize.is_clean(response.model_dump()):
                        scoring.sanitized_response(response)
                once = time.thread_time() - once
            out.append(
                {
                    "cases": n,
                    "suite": suite,
                    "metrics": "default" if default_metrics else METRICS,
                    "profiled": profiler is not None,
                    "prepare_cpu_s": round(cpu, 3),
                    "parts_s": {k: round(spent[k], 3) for k in PARTS},
                    "gc_s_by_generation": {g: round(s, 3) for g, s in sorted(in_gc.items())},
                    "sanitized_response_cpu_s": round(sanitise, 4),
                    "is_clean_first_cpu_s": None if once is None else round(once, 4),
                    "load_average": round(os.getloadavg()[0], 2),
                }
            )
        if save:
            folder = Path(save) / f"{suite}-{n}"
            folder.mkdir(parents=True, exist_ok=True)
            for key in (store.manifest_key(run_id), store.batches_key(run_id)):
                (folder / key.rsplit("/", 1)[-1]).write_bytes(store.get_bytes(key))
            config = store.get_json(store.run_key(run_id))
            (folder / "run.json").write_text(json.dumps(config, sort_keys=True, indent=1))
    return out


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("sizes", nargs="*", type=int, default=[2000])
    parser.add_argument("--suite", choices=sorted(SUITES), default="logged")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--profile", help="write a thread-CPU cProfile of the last run here")
    parser.add_argument("--save", help="write the last run's manifest, batches and config here")
    parser.add_argument(
        "--default-metrics",
        action="store_true",
        help="name no metrics: Prepare chooses the default ones that apply and checks cases",
    )
    args = parser.parse_args()
    for size in args.sizes:
        rows = measure(
            size, args.suite, args.repeats, args.profile, args.save, args.default_metrics
        )
        for row in rows:
            print(json.dumps(row), flush=True)
