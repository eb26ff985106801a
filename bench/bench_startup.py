"""CPU of one cold local run, side by side with another tree (issue 18, start-up).

Runs ``bench_engine.bench`` (2,000 cases, ROUGE + BLEU, the logged target, concurrency 10) in
a fresh process after ``preload()`` (imports apart, as bench_vs_ragas counts them), once in
this tree and once in ``--base`` (another checkout, e.g. ``git worktree add /tmp/base REV``),
the two processes started together so they share the machine's load; prints each one's
wall and CPU seconds, ``--repeat`` times.
Usage: PYTHONPATH=. python bench/bench_startup.py --base /tmp/base [--cases N] [--repeat R]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def one(cases: int) -> None:
    sys.path.insert(0, "bench")
    from bench_engine import bench, preload

    preload()
    cpu = time.process_time()
    result = bench(cases, 10, ["Rouge Metric", "BLEU"], logged=True)
    print("RESULT " + json.dumps({"seconds": result["seconds"], "cpu": time.process_time() - cpu}))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--base", required=True, help="the other tree's root")
    parser.add_argument("--cases", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--one", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        one(args.cases)
        return
    script = str(Path(__file__).resolve())
    for _ in range(args.repeat):
        procs = {
            tree: subprocess.Popen(
                [sys.executable, script, "--one", "--base", "-", "--cases", str(args.cases)],
                cwd=tree,
                env={**os.environ, "PYTHONPATH": "."},
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
            )
            for tree in (str(ROOT), args.base)
        }
        for tree, proc in procs.items():
            out = proc.communicate()[0]
            line = next((x for x in out.splitlines() if x.startswith("RESULT ")), None)
            if line is None:
                raise SystemExit(f"{tree}: no result\n{out[-2000:]}")
            figures = json.loads(line[len("RESULT ") :])
            print(f"{tree}: wall {figures['seconds']:.2f} s, CPU {figures['cpu']:.2f} s")


if __name__ == "__main__":
    main()
