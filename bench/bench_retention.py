"""Issue 18: what the embedded engine retains per case, with and without the retention patches.

Runs bench_engine's run (instant target, lexical metrics) for each size, in this process, and
prints cases/s, process CPU ms per case (steadier than wall time on a shared machine), peak
RSS, and the interpreter threads moto still holds at the end. ``--unpatched`` skips
``install_bounded_retention`` (moto as shipped), for a before/after pair run side by side.
Usage: python bench/bench_retention.py [N ...] [--concurrency C] [--unpatched]
"""

from __future__ import annotations

import argparse
import json
import sys
import time

from moto.stepfunctions.parser import utils as parser_utils

from evalrunner.engine import local

if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("sizes", nargs="*", type=int, default=[500, 2000])
    parser.add_argument("--concurrency", type=int, default=10)
    parser.add_argument("--unpatched", action="store_true")
    args = parser.parse_args()
    if args.unpatched:
        local.install_bounded_retention = lambda: None  # type: ignore[assignment]
    from bench_engine import bench  # after the switch: LocalEngine installs at construction

    bench(20, args.concurrency)
    for n in args.sizes:
        cpu = time.process_time()
        row = bench(n, args.concurrency)
        row["cpu_ms_per_case"] = round((time.process_time() - cpu) * 1000 / n, 1)
        row["retained_threads"] = len(parser_utils.TMP_THREADS)
        row["patched"] = not args.unpatched
        print(json.dumps(row), flush=True)
    sys.exit(0)
