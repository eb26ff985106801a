"""I/O-bound local runs (issue 18): is a run bound by its target or by the engine?

Runs ``evalrunner run`` in a child process against a loopback HTTP target that answers after a
fixed (or uniformly drawn) latency, and prints one JSON line per run:

- ``seconds``: the whole command, and ``whole_ratio`` = seconds / ``ideal_s`` (issue 31 goal 3);
- ``startup_s``: launch to the first request at the target (the pre-flight's probe, unless
  ``--no-preflight``); ``first_case_s``: launch to the first case's request;
  ``target_phase_s``: first request to last response; ``tail_s``: last response to exit
  (Score, Aggregate, reports);
- ``ideal_s``: cases x iterations x mean latency / concurrency, what a run bound only by the
  target would take for its target phase, and ``ratio`` = target_phase_s / ideal_s (null for
  ``--latency 0``, where there is no ideal to compare with);
- ``drawn_ideal_s``: with ``--seed N``, where each case's latency is drawn from its question
  (the same draws in every run and for the pre-flight's probe of a case, so two trees are
  compared on the same latencies), the ideal from those draws;
- ``peak_in_flight``: the most requests the server had open at once;
- ``slot_idle_s``: seconds each of the ``concurrency`` slots sat empty, on average, from the
  first case's request to the last one's, while cases were still waiting to start: the
  dispatch's own cost (refilling a slot after an answer), which the ideal does not count;
- ``cpu_s``: CPU seconds (user + system) the run's processes used, steadier than wall time
  on a shared machine;
- ``peak_rss_mib``: the most resident memory of the whole process tree (the CLI and any
  children), sampled every 50 ms from /proc (Linux only: psutil is not a dependency and these
  are the three lines it would cost).

``--code DIR`` runs the CLI with ``PYTHONPATH=DIR`` (another checkout: the code before a
change, e.g. ``git worktree add /tmp/i18io-base 11b661b``) and may be repeated, so before
and after are measured in one invocation, one run after the other (never two at once: they
would share the machine's cores).

Usage:
  python bench/bench_io.py --cases 500 --latency 2 --concurrency 10 50 \
      --code /tmp/i18io-base --code .
  python bench/bench_io.py --cases 200 --latency 0.05:0.2 --iterations 2 --concurrency 10 50 100
  python bench/bench_io.py --cases 300 --latency 0.5:1.5 --concurrency 20 \
      --code /tmp/base --code . --repeat 3     # the checkouts taking turns, order swapped
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any


class Target:
    """The loopback target's state: latency, requests in flight, first and last times."""

    def __init__(self, low: float, high: float, seed: int | None = None) -> None:
        self.low, self.high = low, high
        self.seed = seed
        self.lock = threading.Lock()
        self.in_flight = 0
        self.peak = 0
        self.requests = 0
        self.first: float | None = None
        self.last: float | None = None
        self.starts: list[float] = []
        self.ends: list[float] = []
        self.stopping = threading.Event()

    def enter(self) -> None:
        with self.lock:
            self.in_flight += 1
            self.requests += 1
            self.peak = max(self.peak, self.in_flight)
            self.starts.append(time.monotonic())
            if self.first is None:
                self.first = time.monotonic()

    def leave(self) -> None:
        with self.lock:
            self.in_flight -= 1
            self.last = time.monotonic()
            self.ends.append(self.last)

    def latency(self, question: str = "") -> float:
        """Seconds to wait before answering ``question`` (bench/peers.py draws per case): a
        fresh draw per request, or with a seed one drawn from the question, so that every run
        (and the pre-flight's probe of a case) gets the same latencies."""
        if self.high <= self.low:
            return self.low
        rng = random if self.seed is None else random.Random(f"{self.seed}:{question}")
        return rng.uniform(self.low, self.high)

    def answer(self, question: str) -> str:
        return f"The answer to {question} is 42."


def handler_for(target: Target) -> type[BaseHTTPRequestHandler]:
    class Answer(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        # TCP_NODELAY, as production servers set it (asyncio's transports, so uvicorn; Node)
        # and the judge stubs do: http.server writes the headers and the body apart, and with
        # Nagle on the body waited for the client's delayed ACK (~40 ms) after every answer
        disable_nagle_algorithm = True

        def do_POST(self) -> None:
            target.enter()
            try:
                length = int(self.headers.get("Content-Length", 0))
                question = json.loads(self.rfile.read(length) or b"{}").get("question", "")
                target.stopping.wait(target.latency(question))
                answer = {"answer": target.answer(question), "contexts": [question]}
                data = json.dumps(answer).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
            finally:
                target.leave()

        def log_message(self, *args: object) -> None:
            pass

    return Answer


def slot_idle(target: Target, cases_start: float | None, concurrency: int) -> float | None:
    """Empty-slot seconds per slot between the first and the last case's request."""
    if cases_start is None or not target.starts:
        return None
    events = sorted([(t, 1) for t in target.starts] + [(t, -1) for t in target.ends])
    idle, open_now, previous = 0.0, 0, None
    last_start = target.starts[-1]
    for at, step in events:
        if previous is not None and cases_start <= previous < last_start:
            idle += max(0, concurrency - open_now) * (min(at, last_start) - previous)
        open_now += step
        previous = at
    return round(idle / concurrency, 2)


def tree_rss_kib(root: int) -> int:
    """Resident KiB of ``root`` and all its descendants, from /proc."""
    children: dict[int, list[int]] = {}
    rss: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            status = Path(f"/proc/{entry}/status").read_text()
        except OSError:
            continue
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        pid, ppid = int(entry), int(fields.get("PPid", "0").strip() or 0)
        children.setdefault(ppid, []).append(pid)
        rss[pid] = int(fields.get("VmRSS", "0 kB").split()[0] or 0)
    total, stack = 0, [root]
    while stack:
        pid = stack.pop()
        total += rss.get(pid, 0)
        stack.extend(children.get(pid, []))
    return total


def one_run(
    code: Path,
    cases: int,
    iterations: int,
    concurrency: int,
    low: float,
    high: float,
    preflight: bool = True,
    seed: int | None = None,
) -> dict[str, Any]:
    target = Target(low, high, seed)
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler_for(target))
    server.daemon_threads = True
    server.request_queue_size = 1024
    threading.Thread(target=server.serve_forever, daemon=True).start()
    work = Path(tempfile.mkdtemp(prefix="bench-io-"))
    try:
        suite = work / "io.csv"
        lines = ["id,question,expected_answer"]
        lines += [
            f"c{i},What is item {i}?,The answer to What is item {i}? is 42." for i in range(cases)
        ]
        suite.write_text("\n".join(lines) + "\n", encoding="utf-8")
        spec = {"url": f"http://127.0.0.1:{server.server_port}/", "timeout_seconds": high + 30}
        command = [
            sys.executable,
            "-m",
            "evalrunner.cli",
            "run",
            "--suite",
            str(suite),
            "--target",
            json.dumps(spec),
            "--metric",
            "Exact match",
            "--iterations",
            str(iterations),
            "--max-concurrency",
            str(concurrency),
            "--out",
            str(work / "out"),
            "--quiet",
            *([] if preflight else ["--no-preflight"]),
        ]
        env = {**os.environ, "PYTHONPATH": str(code.resolve())}
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.monotonic()
        child = subprocess.Popen(
            command, env=env, cwd=code, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        peak_kib = 0
        while child.poll() is None:
            peak_kib = max(peak_kib, tree_rss_kib(child.pid))
            time.sleep(0.05)
        out, err = child.communicate()
        ended = time.monotonic()
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
    finally:
        target.stopping.set()
        server.shutdown()
        server.server_close()
        shutil.rmtree(work, ignore_errors=True)
    items = cases * iterations
    ideal = items * (low + high) / 2 / concurrency
    questions = [f"What is item {i}?" for i in range(cases)]
    drawn = iterations * sum(target.latency(q) for q in questions) / concurrency
    phase = (target.last - target.first) if target.first and target.last else None
    # the first case's call: the request after the pre-flight's, when the run made one
    cases_start = target.starts[1 if target.requests > items else 0] if target.starts else None
    result = {
        "code": str(code),
        "cases": cases,
        "iterations": iterations,
        "latency_s": low if high <= low else f"{low}-{high}",
        "concurrency": concurrency,
        "exit_code": child.returncode,
        "requests": target.requests,
        "seconds": round(ended - started, 2),
        "startup_s": round(target.first - started, 2) if target.first else None,
        "target_phase_s": round(phase, 2) if phase else None,
        "first_case_s": round(cases_start - started, 2) if cases_start else None,
        "tail_s": round(ended - target.last, 2) if target.last else None,
        "ideal_s": round(ideal, 2),
        # with --seed: the same from the latencies drawn for these questions (the probe apart)
        "drawn_ideal_s": round(drawn, 2) if seed is not None else None,
        # an instant target (--latency 0) has no ideal to compare with: no ratio, not a crash
        "ratio": round(phase / ideal, 2) if phase and ideal else None,
        # the whole command, start-up and tail included (issue 31 goal 3)
        "whole_ratio": round((ended - started) / ideal, 2) if ideal else None,
        "peak_in_flight": target.peak,
        "slot_idle_s": slot_idle(target, cases_start, concurrency),
        "cpu_s": round(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime, 2),
        "peak_rss_mib": round(peak_kib / 1024),
    }
    if child.returncode != 0:
        print(out[-2000:], err[-2000:], file=sys.stderr)
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", type=int, default=200)
    parser.add_argument("--iterations", type=int, default=1)
    parser.add_argument(
        "--latency", default="0.2", help="seconds, or LOW:HIGH for a uniform draw per request"
    )
    parser.add_argument("--concurrency", type=int, nargs="+", default=[10, 50])
    parser.add_argument("--code", type=Path, action="append", help="checkout(s) to run")
    parser.add_argument(
        "--no-preflight", action="store_true", help="run with --no-preflight (no probe call)"
    )
    parser.add_argument(
        "--repeat", type=int, default=1, help="runs per checkout, the checkouts taking turns"
    )
    parser.add_argument(
        "--seed",
        type=int,
        help="draw each case's latency from its question (the same draws in every run, so "
        "two trees are compared on the same latencies) instead of afresh per request",
    )
    args = parser.parse_args()
    low, _, high = args.latency.partition(":")
    lo, hi = float(low), float(high or low)
    failed = 0
    codes = args.code or [Path(".")]
    for concurrency in args.concurrency:
        for rep in range(args.repeat):
            # interleaved, the order swapped every repetition: both see the same load
            for code in codes if rep % 2 == 0 else codes[::-1]:
                result = one_run(
                    code,
                    args.cases,
                    args.iterations,
                    concurrency,
                    lo,
                    hi,
                    not args.no_preflight,
                    args.seed,
                )
                print(json.dumps(result), flush=True)
                failed += result["exit_code"] != 0
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
