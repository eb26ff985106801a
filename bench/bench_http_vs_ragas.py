"""2,000 lexical cases end to end, as each tool's user runs it (issue 31, goal 4): whole
processes, imports included on both sides, started together so they share the machine.

- evalrunner: ``evalrunner run --suite s.csv --target '{"url": ...}' --metric "Rouge Metric"
  --metric BLEU --out DIR --fail-on never --quiet`` (the CLI, the embedded engine, an HTTP
  target, the pre-flight call, every report), in the project venv;
- Ragas: bench/scorer_peers/ragas_lexical.py, ``ragas.evaluate()`` with ``RougeScore()`` and
  ``BleuScore()`` over the same questions, references and the answers the HTTP target gives
  (Ragas calls no target and writes no report), in a venv of its own;
- the floor: a plain loop over the same pairs with rouge-score's ``RougeScorer`` (ROUGE-L) and
  nltk's ``sentence_bleu``, in the project venv (what scoring alone costs).

The HTTP target is a loopback server in this process (``ThreadingHTTPServer``, HTTP/1.1 keep-
alive, headers and body in one write); its CPU is this process's, never counted. Each
child's CPU (user + system, imports included) and peak RSS come from ``os.wait4`` at its end,
its wall from its start to its end; the ratios to Ragas are printed, with the load average.

Usage:
  python3 -m venv /tmp/ragas-venv
  /tmp/ragas-venv/bin/pip install -r bench/scorer_peers/requirements-lexical.txt
  .venv/bin/python bench/bench_http_vs_ragas.py [N] [--peers-python PYTHON] [--no-floor]
      [--evalrunner PATH] [--concurrency C]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent

FLOOR = """
import json, sys
from nltk.translate.bleu_score import SmoothingFunction, sentence_bleu
from rouge_score import rouge_scorer
rows = json.load(open(sys.argv[1]))
scorer = rouge_scorer.RougeScorer(["rougeL"])
smooth = SmoothingFunction().method1
total = 0.0
for r in rows:
    total += scorer.score(r["reference"], r["response"])["rougeL"].fmeasure
    total += sentence_bleu([r["reference"].split()], r["response"].split(),
                           smoothing_function=smooth)
print("scored", len(rows), round(total / len(rows), 4))
"""


def answer(question: str) -> str:
    return f"The answer to {question} is 42 days."


def rows(n: int) -> list[dict[str, str]]:
    return [
        {
            "question": f"How many days for item {i}?",
            "reference": f"Item {i} gets 42 days.",
            "response": answer(f"How many days for item {i}?"),
        }
        for i in range(n)
    ]


class Answer(BaseHTTPRequestHandler):
    """The target: ``{"question"}`` in, ``{"answer", "contexts"}`` out, at once."""

    protocol_version = "HTTP/1.1"
    wbufsize = -1  # headers and body leave in one write (no delayed-ACK stall)

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        question = json.loads(self.rfile.read(length))["question"]
        body = json.dumps({"answer": answer(question), "contexts": [question]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
        self.wfile.flush()

    def log_message(self, format: str, *args: Any) -> None:
        pass


def finish(proc: subprocess.Popen[bytes], started: float, name: str, log: Path) -> dict[str, Any]:
    """Wait for ``proc``; its wall, CPU (user + system) and peak RSS, from os.wait4."""
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - started
    proc.returncode = os.waitstatus_to_exitcode(status)
    out = log.read_text(errors="replace")
    if proc.returncode not in (0, 1):
        raise SystemExit(f"{name} exited {proc.returncode}:\n{out[-3000:]}")
    return {
        "tool": name,
        "wall_s": round(wall, 2),
        "cpu_s": round(usage.ru_utime + usage.ru_stime, 2),
        "peak_rss_mib": round(usage.ru_maxrss / 1024),
        "exit": proc.returncode,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("cases", nargs="?", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=10)
    parser.add_argument("--peers-python", default="/tmp/ragas-venv/bin/python")
    parser.add_argument("--evalrunner", default=str(Path(sys.executable).parent / "evalrunner"))
    parser.add_argument("--no-floor", action="store_true")
    args = parser.parse_args()

    server = ThreadingHTTPServer(("127.0.0.1", 0), Answer)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/ask"

    with tempfile.TemporaryDirectory() as tmp:
        data = rows(args.cases)
        (Path(tmp) / "rows.json").write_text(json.dumps(data), encoding="utf-8")
        suite = Path(tmp) / "suite.csv"
        lines = ["id,question,expected_answer"]
        lines += [f"c{i},{r['question']},{r['reference']}" for i, r in enumerate(data)]
        suite.write_text("\n".join(lines) + "\n", encoding="utf-8")
        commands = {
            "evalrunner": [
                str(Path(args.evalrunner).absolute()),
                "run",
                "--suite",
                str(suite),
                "--target",
                json.dumps({"url": url}),
                "--metric",
                "Rouge Metric",
                "--metric",
                "BLEU",
                "--max-concurrency",
                str(args.concurrency),
                "--out",
                str(Path(tmp) / "out"),
                "--fail-on",
                "never",
                "--quiet",
            ],
            "ragas": [
                args.peers_python,
                str(ROOT / "bench" / "scorer_peers" / "ragas_lexical.py"),
                str(Path(tmp) / "rows.json"),
            ],
        }
        if not args.no_floor:
            commands["floor"] = [sys.executable, "-c", FLOOR, str(Path(tmp) / "rows.json")]
        env = {**os.environ, "RAGAS_DO_NOT_TRACK": "true", "XDG_CACHE_HOME": tmp}
        load = os.getloadavg()[0]
        started, procs, logs = {}, {}, {}
        for name, command in commands.items():
            logs[name] = Path(tmp) / f"{name}.log"
            started[name] = time.perf_counter()
            with logs[name].open("wb") as log:
                procs[name] = subprocess.Popen(
                    command, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=tmp
                )
        with ThreadPoolExecutor(len(procs)) as waiting:  # each wall ends when its process does
            futures = {
                name: waiting.submit(finish, p, started[name], name, logs[name])
                for name, p in procs.items()
            }
            results = {name: future.result() for name, future in futures.items()}
        summary = logs["evalrunner"].read_text(errors="replace").strip().splitlines()
    server.shutdown()
    print("evalrunner said:", *summary[-3:], sep="\n  ")
    print(f"cases {args.cases}, load average {load:.1f} -> {os.getloadavg()[0]:.1f}")
    for result in results.values():
        print(json.dumps(result))
    ours, peer = results["evalrunner"], results["ragas"]
    ratios = {
        "cpu_vs_ragas": round(ours["cpu_s"] / peer["cpu_s"], 2),
        "wall_vs_ragas": round(ours["wall_s"] / peer["wall_s"], 2),
    }
    if "floor" in results:
        ratios["cpu_vs_floor"] = round(ours["cpu_s"] / results["floor"]["cpu_s"], 2)
    print(json.dumps(ratios))


if __name__ == "__main__":
    main()
