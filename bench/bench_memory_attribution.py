"""Where a whole embedded run's memory goes as N grows (issue 18): what is held at each step
boundary, attributed to the embedded S3's objects, the interpreter, the records and rows.

bench_engine.py's run (instant target, the four lexical metrics, concurrency 10) with four
probes in the pipeline's handlers: after Prepare (the Map about to start), at Score's start
(the Map done), at Aggregate's start and at its end (the reports in the embedded S3, before
the download). At each probe: ``gc.collect()`` and glibc's ``malloc_trim(0)``, then RSS,
tracemalloc's current total grouped by category (the innermost frame in moto's S3 or
``tempfile``: the embedded S3's objects; in moto's Step Functions: the interpreter; in
evalrunner: by module), and the embedded bucket itself (keys, bytes of their values, bytes
of what holds them in memory: moto's spooled buffers, or the seam's kept bytes). Aggregate's
tracemalloc peak above its start is reported too.
Traced with ``--frames`` frames per allocation (slow: ~3x; the figures are bytes, not seconds,
so machine load does not move them). ``--untraced`` gives the RSS and the bucket only.
Usage: PYTHONPATH=. python bench/bench_memory_attribution.py [N ...] [--frames F] [--untraced]
"""

from __future__ import annotations

import argparse
import ctypes
import gc
import json
import os
import resource
import sys
import tempfile
import tracemalloc
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench_engine import LEXICAL, instant_target, suite_csv

from evalrunner.engine import LocalEngine
from evalrunner.engine.embedded import ACCOUNT, BUCKET
from evalrunner.engine.run_types import PIPELINE_FUNCTIONS
from lambdas.local import local_pipeline

PAGE = os.sysconf("SC_PAGE_SIZE")
MIB = 1024 * 1024
DETAIL = 0  # --detail N: the N largest source lines behind the categories, on stderr

#: Category of an allocation: the first rule that matches a frame, innermost frame first.
RULES = [
    ("moto S3 objects", ("moto/s3/", "/tempfile.py")),
    ("interpreter (moto stepfunctions)", ("moto/stepfunctions/",)),
    ("moto other", ("moto/",)),
    ("evalrunner reports", ("evalrunner/reports/",)),
    ("evalrunner pipeline", ("evalrunner/pipeline/",)),
    ("evalrunner other", ("evalrunner/", "lambdas/")),
]


def rss_mib() -> float:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * PAGE / MIB


def settle() -> None:
    gc.collect()
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except OSError:  # not glibc: RSS is read as it is
        pass


def category(trace: tracemalloc.Traceback) -> str:
    for frame in trace:  # innermost first (tracemalloc's default order)
        for name, needles in RULES:
            if any(needle in frame.filename for needle in needles):
                return name
    return f"other ({Path(trace[0].filename).name})"


def by_category(since: tracemalloc.Snapshot) -> dict[str, float]:
    """Memory allocated since ``since`` and still held, by category: the ten largest, the
    rest lumped."""
    snapshot = tracemalloc.take_snapshot().filter_traces(
        [tracemalloc.Filter(False, tracemalloc.__file__)]
    )
    totals: Counter[str] = Counter()
    lines: Counter[str] = Counter()
    for stat in snapshot.compare_to(since, "traceback"):
        name = category(stat.traceback)
        totals[name] += stat.size_diff
        if DETAIL and name != "rest":
            frame = next(
                (
                    f
                    for f in stat.traceback
                    if any(n in f.filename for n in ("moto/", "evalrunner/"))
                ),
                stat.traceback[0],
            )
            lines[f"{name}: {frame.filename.split('site-packages/')[-1]}:{frame.lineno}"] += (
                stat.size_diff
            )
    if DETAIL:
        for line, size in lines.most_common(DETAIL):
            print(f"  {size / MIB:8.2f} MiB  {line}", file=sys.stderr)
    top = dict(totals.most_common(10))
    top["rest"] = sum(totals.values()) - sum(top.values())
    return {name: round(size / MIB, 2) for name, size in top.items()}


def bucket_stats() -> dict[str, Any]:
    from moto.s3.models import s3_backends

    bucket = s3_backends[ACCOUNT]["aws"].buckets[BUCKET]
    keys = [key for _, versions in bucket.keys.iterlists() for key in versions]
    held = 0
    by_prefix: Counter[str] = Counter()
    for key in keys:
        packed = getattr(key, "_packed", None)  # the seam's CompactKey (its bytes, or deflated)
        if packed is not None:
            held += sys.getsizeof(packed)
        else:  # moto's FakeKey: a SpooledTemporaryFile around a BytesIO (or a file on disk)
            inner = getattr(key._value_buffer, "_file", None)
            held += sys.getsizeof(inner) if hasattr(inner, "getbuffer") else 0
        by_prefix["/".join(key.name.split("/")[:1])] += 1
    return {
        "keys": len(keys),
        "value_bytes_mib": round(sum(key.size for key in keys) / MIB, 2),
        "buffers_mib": round(held / MIB, 2),
        "keys_by_prefix": dict(by_prefix),
    }


class Probes:
    def __init__(self, traced: int) -> None:
        #: frames per traced allocation; 0: untraced
        self.traced = traced
        self.points: dict[str, dict[str, Any]] = {}
        self.since: tracemalloc.Snapshot | None = None

    def probe(self, name: str) -> None:
        settle()
        point: dict[str, Any] = {
            "rss_mib": round(rss_mib(), 1),
            "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
        }
        print(f"{name}:", file=sys.stderr)
        if self.traced and self.since is None:  # the Map's start: trace from here on
            tracemalloc.start(self.traced)
            self.since = tracemalloc.take_snapshot()
        elif self.traced and self.since is not None:
            point["traced_mib"] = round(tracemalloc.get_traced_memory()[0] / MIB, 2)
            point["by_category_mib"] = by_category(self.since)
        point["bucket"] = bucket_stats()
        self.points[name] = point

    def wrap(self, name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def wrapped(event: Any, context: Any) -> Any:
            if name == PIPELINE_FUNCTIONS["ScoreFunctionArn"]:
                self.probe("map_done")
            if name == PIPELINE_FUNCTIONS["AggregateFunctionArn"]:
                self.probe("aggregate_start")
                if self.traced:
                    tracemalloc.reset_peak()
                    start = tracemalloc.get_traced_memory()[0]
            result = fn(event, context)
            if name == PIPELINE_FUNCTIONS["PrepareFunctionArn"]:
                self.probe("map_start")
            if name == PIPELINE_FUNCTIONS["AggregateFunctionArn"]:
                if self.traced:
                    peak = tracemalloc.get_traced_memory()[1] - start
                    self.points["aggregate_start"]["aggregate_peak_above_start_mib"] = round(
                        peak / MIB, 2
                    )
                self.probe("aggregate_end")
            return result

        return wrapped


def measure(n: int, traced: int) -> dict[str, Any]:
    probes = Probes(traced)

    class ProbedEngine(LocalEngine):
        def functions_for(self, runtime):  # type: ignore[no-untyped-def]
            functions = super().functions_for(runtime)
            return {name: probes.wrap(name, fn) for name, fn in functions.items()}

    engine = ProbedEngine(pipeline=local_pipeline, extra_functions={"instant": instant_target})
    event = {
        "key": "test-suites/bench.csv",
        "iterations": 1,
        "target": {"lambdaArn": "instant"},
        "max_concurrency": 10,
        "metrics": LEXICAL,
    }
    with tempfile.TemporaryDirectory() as out:
        result = engine.run(event, suite=suite_csv(n), out_dir=Path(out))
    assert result.summary.items == n and result.summary.target_errors == 0
    return {"cases": n, **probes.points}


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("sizes", nargs="*", type=int, default=[2000, 8000])
    parser.add_argument("--frames", type=int, default=4)
    parser.add_argument("--untraced", action="store_true")
    parser.add_argument("--detail", type=int, default=0)
    args = parser.parse_args()
    DETAIL = args.detail
    for n in args.sizes:
        print(json.dumps(measure(n, 0 if args.untraced else args.frames)), flush=True)
        tracemalloc.stop()
