"""Whole commands as a user runs them, imports included, side by side with another tree
(issue 31 goal 1: start-up, imports, peak RSS).

Each workload is a fresh ``python -m evalrunner.cli ...`` process, run once per tree per
repetition, the trees taking turns (interleaved, the order swapped every repetition) so
both see the same machine load:

- ``--help`` and ``--version`` (the base may not know ``--version``: its exit code says so);
- ``run``: 5 cases, ROUGE, against a loopback HTTP target (a JSON server this script starts on
  127.0.0.1 and stops at the end), reports written, the pre-flight on: as a user runs it;
- ``run exact``: the same with the Exact match metric instead, which needs no nltk: what the
  engine and the reports cost without the stemmer's imports.

Per process: wall seconds (start to exit), CPU seconds (user + system, from ``os.wait4``, which
includes any children it waited for) and peak RSS (``ru_maxrss`` from ``os.wait4``: the largest
process of the tree; a local run is one process). Both trees run on this interpreter (the same
venv): the venv's editable-install finder is taken off ``sys.meta_path`` and the tree's root put
first on ``sys.path``, the same launcher for both, so only the tree differs.

Usage: python bench/bench_startup.py --base /tmp/st-base [--repeat 3]
(``git worktree add --detach /tmp/st-base main`` makes the base.)

``--engine [--cases N]`` is issue 18's measure instead: the CPU of one cold 2,000-case local
run (ROUGE + BLEU, logged target) after ``bench_engine.preload()``, imports apart, the two
trees' processes started together.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

#: Runs evalrunner's CLI from the tree given as the first argument, whatever the venv's
#: editable install points at.
LAUNCH = """
import runpy, sys
sys.meta_path[:] = [f for f in sys.meta_path
                    if not getattr(f, "__module__", "").startswith("__editable__")]
sys.path.insert(0, sys.argv[1])
sys.argv = ["evalrunner", *sys.argv[2:]]
runpy.run_module("evalrunner.cli", run_name="__main__", alter_sys=True)
"""


class Answer(BaseHTTPRequestHandler):
    """A target that answers at once: the answer repeats the question."""

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length", 0))
        question = json.loads(self.rfile.read(length) or b"{}").get("question", "")
        data = json.dumps({"answer": f"The answer to {question} is 42."}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: object) -> None:
        pass


def measure(tree: str, args: list[str]) -> dict[str, float]:
    """One process: wall, CPU and peak RSS, and its exit code."""
    start = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-c", LAUNCH, tree, *args],
        cwd=tree,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    assert proc.stderr is not None
    stderr = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode not in (0, 2) or (proc.returncode == 2 and "--version" not in args):
        raise SystemExit(f"{tree} {args[:2]}: exit {proc.returncode}\n{stderr[-2000:].decode()}")
    return {
        "wall": wall,
        "cpu": usage.ru_utime + usage.ru_stime,
        "rss_mib": usage.ru_maxrss / 1024,
        "rc": proc.returncode,
    }


def one(cases: int) -> None:
    sys.path.insert(0, "bench")
    from bench_engine import bench, preload

    preload()
    cpu = time.process_time()
    result = bench(cases, 10, ["Rouge Metric", "BLEU"], logged=True)
    print("RESULT " + json.dumps({"seconds": result["seconds"], "cpu": time.process_time() - cpu}))


def engine(base: str, cases: int, repeat: int) -> None:
    """Issue 18's figure: the engine's CPU for a cold run, imports apart, both trees at once."""
    script = str(Path(__file__).resolve())
    for _ in range(repeat):
        procs = {
            tree: subprocess.Popen(
                [sys.executable, script, "--one", "--base", "-", "--cases", str(cases)],
                cwd=tree,
                env={**os.environ, "PYTHONPATH": "."},
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
            )
            for tree in (str(ROOT), base)
        }
        for tree, proc in procs.items():
            out = proc.communicate()[0]
            line = next((x for x in out.splitlines() if x.startswith("RESULT ")), None)
            if line is None:
                raise SystemExit(f"{tree}: no result\n{out[-2000:]}")
            figures = json.loads(line[len("RESULT ") :])
            print(f"{tree}: wall {figures['seconds']:.2f} s, CPU {figures['cpu']:.2f} s")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--base", required=True, help="the other tree's root")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--engine", action="store_true", help="issue 18's engine CPU instead")
    parser.add_argument("--cases", type=int, default=2000, help="with --engine")
    parser.add_argument("--one", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        one(args.cases)
        return
    if args.engine:
        engine(args.base, args.cases, args.repeat)
        return
    server = ThreadingHTTPServer(("127.0.0.1", 0), Answer)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    work = Path(tempfile.mkdtemp(prefix="bench-startup-"))
    try:
        suite = work / "five.csv"
        rows = [f"c{i},What is item {i}?,The answer to What is item {i}? is 42." for i in range(5)]
        suite.write_text("id,question,expected_answer\n" + "\n".join(rows) + "\n", "utf-8")
        target = json.dumps({"url": f"http://127.0.0.1:{server.server_port}/"})

        def run_args(metric: str) -> list[str]:
            out = work / "out"
            shutil.rmtree(out, ignore_errors=True)
            return [
                "run",
                "--suite",
                str(suite),
                "--target",
                target,
                "--metric",
                metric,
                "--out",
                str(out),
                "--quiet",
                "--fail-on",
                "errors",
            ]

        workloads = {
            "--help": lambda: ["--help"],
            "--version": lambda: ["--version"],
            "run (ROUGE, 5 cases)": lambda: run_args("Rouge Metric"),
            "run (Exact match, 5 cases)": lambda: run_args("Exact match"),
        }
        trees = {"before": str(Path(args.base).resolve()), "after": str(ROOT)}
        figures: dict[tuple[str, str], list[dict[str, float]]] = {}
        load_before = os.getloadavg()
        for rep in range(args.repeat):
            order = list(trees.items()) if rep % 2 == 0 else list(trees.items())[::-1]
            for name, make in workloads.items():
                for label, tree in order:
                    figures.setdefault((name, label), []).append(measure(tree, make()))
        load_after = os.getloadavg()
    finally:
        server.shutdown()
        shutil.rmtree(work, ignore_errors=True)
    print(
        f"load average (1, 5, 15 min) before {tuple(round(x, 2) for x in load_before)}, "
        f"after {tuple(round(x, 2) for x in load_after)}; {args.repeat} repetitions, "
        f"{os.cpu_count()} CPUs"
    )
    print("| command | tree | wall s (median; min) | CPU s (median) | peak RSS MiB (max) | exit |")
    print("|---|---|---|---|---|---|")
    for (name, label), runs in figures.items():
        walls = [r["wall"] for r in runs]
        print(
            f"| {name} | {label} | {statistics.median(walls):.2f}; {min(walls):.2f} | "
            f"{statistics.median(r['cpu'] for r in runs):.2f} | "
            f"{max(r['rss_mib'] for r in runs):.0f} | {int(runs[0]['rc'])} |"
        )


if __name__ == "__main__":
    main()
