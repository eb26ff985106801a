"""Where the tail after the last answer goes (issue 31 goal 2): Score, Aggregate's steps and
report writers, copying the set out, the history page, the saved records' removal, the
verdict printed.

Runs ``evalrunner run`` in this process (``evalrunner.cli.main``, as the console script does)
against a loopback HTTP target (bench_io.py's), with timers around the steps named below,
and prints one JSON object: each step's seconds that ended after the last answer, and
``main_s``, last answer to ``main`` returning (``bench_io.py``'s ``tail_s`` adds the
interpreter's exit and its own 50 ms sampling), and ``main_cpu_s``, the CPU of that span.
``PYTHONPATH=<another checkout>`` runs that tree's code (a before figure).

Usage:
  python bench/bench_tail.py --cases 300 --latency 0.3
  python bench/bench_tail.py --cases 10000 --latency 0.001 --concurrency 50
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from http.server import ThreadingHTTPServer
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from bench_io import Target, handler_for

SPANS: list[tuple[str, float, float]] = []


class CpuTarget(Target):
    """bench_io's target, noting this process's CPU time at the last answer too: the CLI
    runs in this process, so ``main_cpu_s`` (CPU from the last answer to ``main``
    returning, every thread) is the tail's CPU, steadier than its wall on a shared machine."""

    last_cpu: float | None = None

    def leave(self) -> None:
        super().leave()
        self.last_cpu = time.process_time()


def timed(owner: Any, name: str, label: str | None = None) -> None:
    inner: Callable[..., Any] = getattr(owner, name)

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        started = time.monotonic()
        try:
            return inner(*args, **kwargs)
        finally:
            SPANS.append((label or name, started, time.monotonic()))

    setattr(owner, name, wrapper)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", type=int, default=300)
    parser.add_argument("--latency", type=float, default=0.3)
    parser.add_argument("--concurrency", type=int, default=20)
    args = parser.parse_args()

    import shutil

    import evalrunner.cli.running as running
    import evalrunner.engine.dispatch as dispatch
    import evalrunner.engine.local as local
    import evalrunner.pipeline.aggregate as aggregate

    for name in ("build_report", "to_csv", "details_xlsx", "render_report", "_refresh_history"):
        timed(aggregate, name)
    timed(local, "download_set")
    timed(local, "local_history_notices", "history page (local)")
    timed(shutil, "rmtree", "saved records removed")
    timed(running, "report", "verdict printed")
    invoke = dispatch.Dispatcher.invoke

    def traced(self: Any, function: str, body: Any, headers: dict[str, str]) -> bytes:
        started = time.monotonic()
        try:
            return invoke(self, function, body, headers)
        finally:
            SPANS.append((function.rsplit(":", 1)[-1], started, time.monotonic()))

    dispatch.Dispatcher.invoke = traced  # type: ignore[method-assign]

    target = CpuTarget(args.latency, args.latency)
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler_for(target))
    server.daemon_threads = True
    server.request_queue_size = 1024
    threading.Thread(target=server.serve_forever, daemon=True).start()
    work = Path(tempfile.mkdtemp(prefix="bench-tail-"))
    suite = work / "tail.csv"
    lines = ["id,question,expected_answer"]
    lines += [
        f"c{i},What is item {i}?,The answer to What is item {i}? is 42." for i in range(args.cases)
    ]
    suite.write_text("\n".join(lines) + "\n", encoding="utf-8")
    spec = {"url": f"http://127.0.0.1:{server.server_port}/", "timeout_seconds": 30}
    sys.argv = [
        "evalrunner", "run", "--suite", str(suite), "--target", json.dumps(spec),
        "--metric", "Exact match", "--max-concurrency", str(args.concurrency),
        "--out", str(work / "out"), "--quiet",
    ]  # fmt: skip
    from evalrunner.cli import main as cli_main

    code: Any = 0
    try:
        cli_main()
    except SystemExit as exit_:
        code = exit_.code
    ended, ended_cpu = time.monotonic(), time.process_time()
    last = target.last or ended
    parts: dict[str, float] = {}
    for label, started, finished in SPANS:
        if finished >= last and label != "evalrunner-run-case":
            parts[label] = round(parts.get(label, 0.0) + finished - max(started, last), 3)
    print(
        json.dumps(
            {
                "cases": args.cases,
                "exit_code": code,
                "main_s": round(ended - last, 3),
                "main_cpu_s": round(ended_cpu - (target.last_cpu or ended_cpu), 3),
                **parts,
            }
        )
    )
    return 0 if code == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
