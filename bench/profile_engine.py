"""CPU profile of every thread of one bench_engine run (issue 18).

cProfile sees only the thread that enables it, and the engine runs each case on interpreter
threads: every ``threading.Thread.run`` is wrapped in a profiler of its own, on the thread's
CPU clock (``time.thread_time``: time spent waiting for the GIL is not counted), and all are
merged at the end. After a 20-case warm-up. Merging thousands of thread profiles takes
minutes on a loaded machine.
Usage: PYTHONPATH=. python bench/profile_engine.py [N] [--out FILE] [--logged]
(default 1000 cases, concurrency 10; then ``python -m pstats FILE`` or the printed top of
both orderings)
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_engine import bench

_profiles: list[cProfile.Profile] = []
_lock = threading.Lock()
_run = threading.Thread.run


def _profiled_run(self: threading.Thread) -> None:
    profile = cProfile.Profile(time.thread_time)
    with _lock:
        _profiles.append(profile)
    profile.enable()
    try:
        _run(self)
    finally:
        profile.disable()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("cases", nargs="?", type=int, default=1000)
    parser.add_argument("--concurrency", type=int, default=10)
    parser.add_argument("--out", default="engine.pstats")
    parser.add_argument("--logged", action="store_true", help="answers in the suite")
    args = parser.parse_args()
    threading.Thread.run = _profiled_run  # type: ignore[method-assign]
    bench(20, args.concurrency)
    with _lock:
        _profiles.clear()
    main_thread = cProfile.Profile(time.thread_time)
    main_thread.enable()
    print(bench(args.cases, args.concurrency, logged=args.logged), flush=True)
    main_thread.disable()
    stats = pstats.Stats(main_thread)
    for profile in _profiles:
        stats.add(profile)
    stats.dump_stats(args.out)
    stats.sort_stats("tottime").print_stats(30)
    stats.sort_stats("cumulative").print_stats("evalrunner|lambdas", 30)


if __name__ == "__main__":
    main()
