"""Calls a killed-and-resumed run makes, against one run (issue 27, item 2).

``evalrunner run`` in a child process against a loopback HTTP target that counts the calls
it receives and the answers it sends. Three runs of the same N-case suite: one to the end;
one stopped when the target has answered half the cases (``kill -9``, then SIGTERM) and then
``--resume``d. The target holds the call after the half while the run is stopped (a slow
target mid-run), so the stop lands mid-call: that call is received twice and answered once.
Prints one JSON line per run: answers sent, calls received, questions answered twice, and
the wall seconds of each process.

Usage: python bench/bench_resume.py [N] [--concurrency C]
"""

from __future__ import annotations

import argparse
import collections
import json
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.support.holding_target import HoldingTarget

EVALRUNNER = str(Path(sys.executable).parent / "evalrunner")


def command(suite: Path, url: str, out: Path, concurrency: int, *extra: str) -> list[str]:
    return [
        EVALRUNNER,
        "run",
        "--suite",
        str(suite),
        "--target",
        json.dumps({"url": url, "max_retries": 0, "name": "bench-resume"}),
        "--metric",
        "Token F1",
        "--max-concurrency",
        str(concurrency),
        "--out",
        str(out),
        "--quiet",
        # the pre-flight's probe would ask the first question once more: this counts the
        # cases' calls (a resumed run makes no probe), as tests/integration/test_stopped_run.py
        "--no-preflight",
        *extra,
    ]


def one(suite: Path, out: Path, n: int, concurrency: int, stop: str | None) -> dict[str, object]:
    target = HoldingTarget(n // 2 if stop else None, lambda q: f"The answer to {q}")
    url = f"{target.server.url}/ask"
    seconds = []
    try:
        started = time.perf_counter()
        child = subprocess.Popen(
            command(suite, url, out, concurrency),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        if stop:
            while True:
                with target.lock:
                    held = len(target.received) > n // 2
                if held or child.poll() is not None:
                    break
                time.sleep(0.02)
            child.send_signal(signal.SIGKILL if stop == "kill -9" else signal.SIGTERM)
        first_code = child.wait(300)
        seconds.append(round(time.perf_counter() - started, 2))
        target.released.set()
        codes = [first_code]
        if stop:
            run_id = next((out / "runs").iterdir()).name
            started = time.perf_counter()
            resumed = subprocess.run(
                command(suite, url, out, concurrency, "--resume", run_id),
                capture_output=True,
                text=True,
                timeout=300,
            )
            seconds.append(round(time.perf_counter() - started, 2))
            codes.append(resumed.returncode)
    finally:
        target.released.set()
        target.server.close()
    twice = [q for q, k in collections.Counter(target.answered).items() if k > 1]
    return {
        "run": f"{stop} + --resume" if stop else "one run",
        "cases": n,
        "concurrency": concurrency,
        "exit_codes": codes,
        "answers_sent": len(target.answered),
        "calls_received": len(target.received),
        "answered_twice": len(twice),
        "seconds": seconds,
    }


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("n", type=int, nargs="?", default=40)
    parser.add_argument("--concurrency", type=int, default=1)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        suite = folder / "resume.csv"
        suite.write_text(
            "question,expected_answer\n"
            + "".join(f"Question {i}?,The answer to Question {i}?\n" for i in range(args.n)),
            encoding="utf-8",
        )
        for number, stop in enumerate((None, "kill -9", "SIGTERM")):
            print(json.dumps(one(suite, folder / f"out{number}", args.n, args.concurrency, stop)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
