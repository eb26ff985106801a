"""CPU per HTTP target call (issue 31, goal 4): ``HttpTarget.invoke`` N times at concurrency C
against an instant loopback target served by another process (its CPU is not counted).

Usage: .venv/bin/python bench/bench_http_target.py [N] [--concurrency C]
(for a tree before a change: PYTHONPATH=<that tree> with the same script)
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from http.server import ThreadingHTTPServer
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_http_vs_ragas import Answer


def serve(port: multiprocessing.Queue) -> None:  # type: ignore[type-arg]
    server = ThreadingHTTPServer(("127.0.0.1", 0), Answer)
    server.daemon_threads = True
    port.put(server.server_address[1])
    server.serve_forever()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("calls", nargs="?", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=10)
    args = parser.parse_args()
    port: multiprocessing.Queue = multiprocessing.Queue()  # type: ignore[type-arg]
    server = multiprocessing.Process(target=serve, args=(port,), daemon=True)
    server.start()

    from evalrunner.suite.model import TestCase
    from evalrunner.targets.http import HttpTarget

    target = HttpTarget({"url": f"http://127.0.0.1:{port.get()}/ask"})
    cases = [
        TestCase(index=i, case_id=f"c{i}", question=f"How many days for item {i}?")
        for i in range(args.calls)
    ]
    for case in cases[: args.concurrency]:  # connections opened, modules loaded
        target.invoke(case)
    cpu, wall = time.process_time(), time.perf_counter()
    with ThreadPoolExecutor(args.concurrency) as pool:
        answers = list(pool.map(target.invoke, cases))
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    assert all(a.answer.endswith("42 days.") for a in answers)
    print(
        json.dumps(
            {
                "calls": args.calls,
                "concurrency": args.concurrency,
                "cpu_ms_per_call": round(cpu * 1000 / args.calls, 3),
                "calls_per_s": round(args.calls / wall),
            }
        )
    )
    server.terminate()


if __name__ == "__main__":
    main()
