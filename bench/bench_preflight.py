"""How long a newcomer's first three mistakes take to end: wall time of `evalrunner run` (a
child process, Python start included) against a target that is down, one that answers in a
shape evalrunner cannot read, and a judge that refuses a missing API key; with the pre-flight
(the default) and with ``--no-preflight`` (what every run did before it: the whole suite
first). Servers are ThreadingHTTPServers on 127.0.0.1 in this process.

    python bench/bench_preflight.py              # 50 cases, default retries
    python bench/bench_preflight.py --cases 200
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
EVALRUNNER = [sys.executable, "-m", "evalrunner.cli"]


@contextmanager
def server(status: int, body: dict[str, Any]) -> Iterator[str]:
    """An endpoint answering every POST with ``status`` and ``body``; yields its base URL."""
    payload = json.dumps(body).encode()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def run(suite: Path, out: Path, target: dict[str, Any], *extra: str) -> tuple[float, int, str]:
    env = {**os.environ, "COLUMNS": "200"}
    env.pop("OPENAI_API_KEY", None)
    args = [*EVALRUNNER, "run", "--suite", str(suite), "--target", json.dumps(target)]
    args += ["--out", str(out), "--quiet", *extra]
    start = time.perf_counter()
    done = subprocess.run(args, capture_output=True, text=True, env=env, check=False)
    seconds = time.perf_counter() - start
    first = (done.stderr.strip().splitlines() or done.stdout.strip().splitlines() or [""])[0]
    return seconds, done.returncode, first[:100]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", type=int, default=50)
    options = parser.parse_args()
    rows = "".join(f"Question {i}?,answer {i}\n" for i in range(options.cases))
    with tempfile.TemporaryDirectory() as folder:
        suite = Path(folder) / "s.csv"
        suite.write_text("question,expected_answer\n" + rows, "utf-8")
        out = Path(folder) / "out"
        with (
            server(200, {"payload": {"reply": "answer"}}) as shape,
            server(200, {"answer": "answer 1"}) as good,
            server(401, {"error": {"message": "no API key"}}) as judge,
        ):
            mistakes = {
                "target down": ({"url": f"http://127.0.0.1:{closed_port()}/ask"}, ()),
                "wrong response shape": ({"url": f"{shape}/ask"}, ()),
                "judge key missing": (
                    {"url": f"{good}/ask"},
                    (
                        "--metric",
                        "Answer Relevancy",
                        "--judge",
                        json.dumps({"openai": {"base_url": f"{judge}/v1", "model": "m"}}),
                    ),
                ),
            }
            print(f"{options.cases} cases, default retries; wall seconds (exit code)")
            for name, (target, extra) in mistakes.items():
                with_probe = run(suite, out, target, *extra)
                without = run(suite, out, target, *extra, "--no-preflight")
                print(
                    f"{name:22} pre-flight {with_probe[0]:6.1f} s ({with_probe[1]})   "
                    f"--no-preflight {without[0]:6.1f} s ({without[1]})   {with_probe[2]}"
                )
            healthy = run(suite, out, {"url": f"{good}/ask"}, "--metric", "Token F1")
            unprobed = run(
                suite, out, {"url": f"{good}/ask"}, "--metric", "Token F1", "--no-preflight"
            )
            print(
                f"{'healthy target':22} pre-flight {healthy[0]:6.1f} s ({healthy[1]})   "
                f"--no-preflight {unprobed[0]:6.1f} s ({unprobed[1]})"
            )


if __name__ == "__main__":
    main()
