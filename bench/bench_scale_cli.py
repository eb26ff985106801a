"""A large suite through the CLI, as a user runs it: ``evalrunner run`` against a fast loopback
HTTP target (issue 20: a 10,000-case run used to hang after ~1,000 items per Map worker).

Starts its own JSON server on 127.0.0.1 (bounded: it stops when the run ends), writes an
N-case csv suite, runs the CLI in a child process under ``/usr/bin/time -v`` and prints one
JSON line: cases, concurrency, exit code, wall seconds, cases/s, peak RSS.
Usage: python bench/bench_scale_cli.py [N] [--concurrency C] [--stall-timeout S]
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path


class Answer(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length", 0))
        question = json.loads(self.rfile.read(length) or b"{}").get("question", "")
        body = json.dumps({"answer": f"The answer to {question} is 42.", "contexts": [question]})
        data = body.encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: object) -> None:
        pass


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("cases", nargs="?", type=int, default=10_000)
    parser.add_argument("--concurrency", type=int, default=10)
    parser.add_argument("--stall-timeout", type=float, default=120)
    args = parser.parse_args()
    server = ThreadingHTTPServer(("127.0.0.1", 0), Answer)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    work = Path(tempfile.mkdtemp(prefix="bench-scale-"))
    try:
        suite = work / "scale.csv"
        lines = ["id,question,expected_answer"]
        lines += [
            f"c{i},What is item {i}?,The answer to What is item {i}? is 42."
            for i in range(args.cases)
        ]
        suite.write_text("\n".join(lines) + "\n", encoding="utf-8")
        target = json.dumps({"url": f"http://127.0.0.1:{server.server_port}/"})
        command = [
            "/usr/bin/time",
            "-v",
            sys.executable,
            "-m",
            "evalrunner.cli",
            "run",
            "--suite",
            str(suite),
            "--target",
            target,
            "--metric",
            "Rouge Metric",
            "--metric",
            "Exact match",
            "--max-concurrency",
            str(args.concurrency),
            "--stall-timeout",
            str(args.stall_timeout),
            "--out",
            str(work / "out"),
            "--quiet",
        ]
        done = subprocess.run(command, capture_output=True, text=True, check=False)
    finally:
        server.shutdown()
        shutil.rmtree(work, ignore_errors=True)
    wall = re.search(r"Elapsed \(wall clock\) time.*: (?:(\d+):)?(\d+):([\d.]+)", done.stderr)
    rss = re.search(r"Maximum resident set size \(kbytes\): (\d+)", done.stderr)
    seconds = None
    if wall:
        hours, minutes, secs = wall.groups()
        seconds = int(hours or 0) * 3600 + int(minutes) * 60 + float(secs)
    print(
        json.dumps(
            {
                "cases": args.cases,
                "concurrency": args.concurrency,
                "exit_code": done.returncode,
                "seconds": seconds,
                "cases_per_s": round(args.cases / seconds, 1) if seconds else None,
                "peak_rss_mib": round(int(rss.group(1)) / 1024) if rss else None,
            }
        )
    )
    if done.returncode != 0:
        print(done.stdout[-2000:], done.stderr[-2000:], file=sys.stderr)
    return done.returncode


if __name__ == "__main__":
    sys.exit(main())
