"""What a huge answer costs a run: wall time and peak RSS of `evalrunner run`, measured with
`/usr/bin/time -v`, against a loopback HTTP target answering a short answer or a big one.

The CLI runs in a child process (so its peak RSS is its own), from the checkout given with
``--repo`` (default: this one), so the same script measures a base commit in a second
worktree. The target is a ThreadingHTTPServer on 127.0.0.1 in this process; it stops when
the script ends. The suite has one case; the default evaluator selection runs (every
evaluator that needs no model and no judge: ROUGE, BLEU, looping, ...).

    python bench/bench_big_answer.py                       # short vs 5 MB, default caps
    python bench/bench_big_answer.py --target-extra '{"max_response_bytes": 8388608}'
    python bench/bench_big_answer.py --repo /tmp/base      # the same on another checkout
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
SUITE = (
    "id,question,expected_answer\n"
    "q1,How many days of annual leave do I get?,"
    "Full-time employees receive 25 days of paid annual leave per calendar year.\n"
)
SHORT = "Full-time employees get 25 days of paid annual leave each calendar year."


def big_answer(size: int) -> str:
    """``size`` characters of varied prose (not one repeated character, which some
    evaluators would short-cut): sentences with a counter, like a runaway model."""
    parts, total, i = [], 0, 0
    while total < size:
        sentence = f"Point {i}: employees receive {i % 40} days of leave under policy {i % 7}. "
        parts.append(sentence)
        total += len(sentence)
        i += 1
    return "".join(parts)[:size]


@contextmanager
def target(answer: str) -> Iterator[str]:
    body = json.dumps({"answer": answer, "contexts": ["Annual leave is 25 days."]}).encode()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            try:
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
            except OSError:
                pass  # the client stopped reading at its cap

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/ask"
    finally:
        server.shutdown()
        server.server_close()


def measure(repo: Path, python: str, url: str, extra: dict[str, Any]) -> dict[str, Any]:
    """One `evalrunner run` under /usr/bin/time -v: seconds, peak RSS and the case's status."""
    with tempfile.TemporaryDirectory() as tmp:
        suite = Path(tmp) / "big.csv"
        suite.write_text(SUITE, encoding="utf-8")
        out = Path(tmp) / "out"
        command = [
            "/usr/bin/time",
            "-v",
            python,
            "-c",
            "from evalrunner.cli import main; main()",
            "run",
            "--suite",
            str(suite),
            "--target",
            json.dumps({"url": url, "max_retries": 0, **extra}),
            "--out",
            str(out),
            "--quiet",
        ]
        env = {**os.environ, "PYTHONPATH": str(repo)}
        done = subprocess.run(command, cwd=repo, env=env, capture_output=True, text=True)
        wall_clock = r"Elapsed \(wall clock\) time.*: (?:(\d+):)?(\d+):([\d.]+)"
        elapsed = re.search(wall_clock, done.stderr)
        rss = re.search(r"Maximum resident set size \(kbytes\): (\d+)", done.stderr)
        cpu = sum(
            float(m) for m in re.findall(r"(?:User|System) time \(seconds\): ([\d.]+)", done.stderr)
        )
        if elapsed is None or rss is None:
            raise SystemExit(f"no /usr/bin/time figures:\n{done.stderr[-2000:]}")
        hours, minutes, seconds = elapsed.groups()
        wall = int(hours or 0) * 3600 + int(minutes) * 60 + float(seconds)
        details = next(out.rglob("*details.csv"), None)
        status = notes = ""
        if details is not None:
            import csv

            csv.field_size_limit(sys.maxsize)  # the base commit writes the 5 MB answer
            (row,) = csv.DictReader(details.read_text("utf-8-sig").splitlines())
            status = row["status"] + (f" ({row['error'][:90]})" if row.get("error") else "")
            notes = row.get("notes", "")[:120]
        return {
            "exit": done.returncode,
            "seconds": round(wall, 2),
            "cpu_seconds": round(cpu, 2),
            "peak_rss_mib": round(int(rss.group(1)) / 1024, 1),
            "status": status,
            "notes": notes,
        }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repo", type=Path, default=HERE.parent, help="checkout to run")
    parser.add_argument("--python", default=sys.executable)
    parser.add_argument("--size", type=int, default=5_000_000, help="big answer, characters")
    parser.add_argument("--target-extra", default="{}", help="JSON merged into the target")
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args()
    extra = json.loads(args.target_extra)
    rows = []
    for label, answer in (("short", SHORT), (f"{args.size:,} chars", big_answer(args.size))):
        with target(answer) as url:
            for _ in range(args.repeat):
                rows.append({"answer": label, **measure(args.repo, args.python, url, extra)})
                print(json.dumps(rows[-1]), flush=True)
    short = [r for r in rows if r["answer"] == "short"]
    big = [r for r in rows if r["answer"] != "short"]
    extra_s = min(r["seconds"] for r in big) - min(r["seconds"] for r in short)
    extra_mib = min(r["peak_rss_mib"] for r in big) - min(r["peak_rss_mib"] for r in short)
    extra_cpu = min(r["cpu_seconds"] for r in big) - min(r["cpu_seconds"] for r in short)
    print(
        f"big vs short (best of each): {extra_s:+.2f} s elapsed, {extra_cpu:+.2f} s CPU, "
        f"{extra_mib:+.1f} MiB peak RSS"
    )


if __name__ == "__main__":
    main()
