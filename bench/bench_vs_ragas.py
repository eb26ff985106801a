"""This engine against Ragas ``evaluate()`` on the same cases with the same lexical metrics
(issue 18, goal: not slower than Ragas).

Both sides score the same N cases (default 2,000) with ROUGE and BLEU, no LLM:
- evalrunner: the whole local pipeline as ``evalrunner run`` runs it (bench_engine.bench: the
  state machine in the embedded engine, metrics ``Rouge Metric`` and ``BLEU``, concurrency 10,
  every report written), in the project venv. By default the suite carries the responses
  (``actual_answer``, the ``logged`` target: nothing is called), as Ragas is handed them;
  ``--target instant`` has a Lambda target the engine hosts answer instead. The modules a run
  imports on first use are imported first and timed apart, as the Ragas side's are;
- Ragas (bench/scorer_peers/ragas_lexical.py, in a venv of its own): ``ragas.evaluate()`` over
  an ``EvaluationDataset`` of the same questions, references and responses (the answers the
  instant target gives), metrics ``RougeScore()`` and ``BleuScore()``. Ragas only scores
  rows it is given: it calls no target and writes no report, so its side does less work.

The two processes start together, so they share the machine's load (side by side in one
run); each reports wall seconds, its own CPU seconds, cases/s and peak RSS; the ratio
evalrunner / Ragas is printed for each.

Usage:
  python3 -m venv /tmp/ragas-venv
  /tmp/ragas-venv/bin/pip install -r bench/scorer_peers/requirements-lexical.txt
  PYTHONPATH=. .venv/bin/python bench/bench_vs_ragas.py [N] [--peers-python PYTHON]
      [--target logged|instant]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
METRICS = ["Rouge Metric", "BLEU"]


def cases(n: int) -> list[dict[str, str]]:
    """The rows of bench_engine.suite_csv with the answer its instant target gives."""
    return [
        {
            "question": f"How many days for item {i}?",
            "reference": f"Item {i} gets 42 days.",
            "response": f"The answer to How many days for item {i}? is 42 days.",
        }
        for i in range(n)
    ]


def evalrunner_side(n: int, concurrency: int, logged: bool) -> None:
    sys.path.insert(0, str(ROOT / "bench"))
    from bench_engine import bench, preload

    imported = preload()  # apart, as the Ragas side counts its imports apart
    result = bench(n, concurrency, METRICS, logged=logged)
    print(
        "RESULT "
        + json.dumps({"tool": "evalrunner", "import_seconds": round(imported, 2), **result})
    )


def result_of(output: str) -> dict:
    line = next((x for x in output.splitlines() if x.startswith("RESULT ")), None)
    if line is None:
        raise SystemExit(f"no result:\n{output[-3000:]}")
    return json.loads(line[len("RESULT ") :])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("cases", nargs="?", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=10)
    parser.add_argument("--peers-python", default="/tmp/ragas-venv/bin/python")
    parser.add_argument(
        "--target",
        choices=["logged", "instant"],
        default="logged",
        help="logged (default): the suite carries the answers, as Ragas is handed them; "
        "instant: a Lambda target the engine hosts answers each case",
    )
    parser.add_argument("--side", choices=["evalrunner"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.side == "evalrunner":
        evalrunner_side(args.cases, args.concurrency, args.target == "logged")
        return
    with tempfile.TemporaryDirectory() as tmp:
        rows = Path(tmp) / "cases.json"
        rows.write_text(json.dumps(cases(args.cases)), encoding="utf-8")
        ours = [sys.executable, __file__, str(args.cases), "--side", "evalrunner"]
        ours += ["--concurrency", str(args.concurrency), "--target", args.target]
        peer = [args.peers_python, str(ROOT / "bench" / "scorer_peers" / "ragas_lexical.py")]
        procs = {
            "evalrunner": subprocess.Popen(
                ours, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
            ),
            "ragas": subprocess.Popen(
                [*peer, str(rows)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
            ),
        }
        results = {name: result_of(p.communicate()[0]) for name, p in procs.items()}
    for result in results.values():
        print(json.dumps(result))
    ours_r, peer_r = results["evalrunner"], results["ragas"]
    print(
        json.dumps(
            {
                "cases_per_s_ratio": round(ours_r["cases_per_s"] / peer_r["cases_per_s"], 2),
                "cpu_per_case_ratio": round(ours_r["cpu_seconds"] / peer_r["cpu_seconds"], 2),
                "peak_rss_ratio": round(ours_r["peak_rss_mib"] / peer_r["peak_rss_mib"], 2),
            }
        )
    )


if __name__ == "__main__":
    main()
