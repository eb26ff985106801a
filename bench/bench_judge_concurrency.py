"""A judge-bound run against its ideal at the allowed concurrency (issue 31 goal 5).

100 cases (answers and contexts given, so no target is called) × the five RAG metrics, judged
by the loopback judge stub (tests/support/judge_stub.py) answering every request in
``--delay`` seconds with a schema-valid reply built from the request's own json_schema, run
through the CLI (``evalrunner run``, in this process, after a warm-up run that pays the
imports) at ``--max-concurrency 20``. Each configuration gets its own stub (its own endpoint,
so its own adaptive limiter) and no judge cache.

The ideal is what the judge alone allows: judge requests × delay / the calls that may be in
flight, min(cases at once, judge cap, the endpoint's own limit). Ratio = wall / ideal.

Configurations:
- ``fixed 8``: ``judge.max_concurrency`` 8, the old default (the limiter starts at and is
  capped by 8, as the old fixed semaphore was);
- ``adaptive (default)``: no ``max_concurrency`` (cap 32, start 16);
- ``adaptive, endpoint limit 10``: the stub answers 429 above 10 in flight (a rate-limited
  key); the ideal is at 10;
- ``instant judge``: the default with a judge answering at once: what the run costs besides
  waiting for the judge (the engine, the HTTP calls, the metrics, the reports), a floor
  that adds to the ideal on a machine with few cores.

Usage: .venv/bin/python bench/bench_judge_concurrency.py [--cases 100] [--delay 0.3]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from typer.testing import CliRunner  # noqa: E402

from evalrunner.cli import app  # noqa: E402
from evalrunner.judge.reply_format import Leaves, schema_instance  # noqa: E402
from tests.support.judge_stub import JudgeStub, StubReply  # noqa: E402

FIVE = [
    "Faithfulness",
    "Answer Relevancy",
    "Contextual Precision",
    "Contextual Recall",
    "Contextual Relevancy",
]
LEAVES = Leaves(
    text=lambda name: f"a plausible {name.replace('_', ' ')}",
    items=lambda node: int(node.get("minItems", 2)),
    number=lambda node: float(node.get("maximum", 1)),
)
CONCURRENCY = 20


def suite(path: Path, cases: int) -> Path:
    base = json.loads((ROOT / "bench/judge_peers/rag_cases.json").read_text())["cases"]
    rows = []
    for i in range(cases):
        case = base[i % len(base)]
        rows.append(
            {
                "id": f"case-{i:04d}",
                "question": f"{case['question']} (variant {i})",
                "expected_answer": case["expected_answer"],
                "actual_answer": f"{case['answer']} (variant {i})",
                "retrieved_contexts": json.dumps(case["contexts"]),
            }
        )
    path.write_text(json.dumps({"cases": rows}), encoding="utf-8")
    return path


def responder(delay: float) -> Any:
    def answer(messages: list[dict[str, Any]], request: dict[str, Any]) -> StubReply:
        schema = request["response_format"]["json_schema"]["schema"]
        return StubReply(schema_instance(schema, "value", LEAVES), delay=delay)

    return answer


def run(suite_path: Path, out: Path, judge: dict[str, Any]) -> tuple[float, dict[str, Any]]:
    args = ["run", "--suite", str(suite_path), "--target", '{"lambdaArn": "evalrunner-demo-hr"}']
    for metric in FIVE:
        args += ["--metric", metric]
    args += ["--judge", json.dumps(judge), "--max-concurrency", str(CONCURRENCY)]
    args += ["--out", str(out), "--json", "--quiet", "--no-preflight", "--fail-on", "errors"]
    start = time.perf_counter()
    result = CliRunner().invoke(app, args, catch_exceptions=False)
    wall = time.perf_counter() - start
    if result.exit_code != 0:
        raise SystemExit(f"run failed ({result.exit_code}): {result.output[-2000:]}")
    return wall, json.loads(result.stdout)


def measure(
    name: str, suite_path: Path, tmp: Path, delay: float, cap: int | None, limit: int | None
) -> dict[str, Any]:
    with JudgeStub(responder(delay)) as stub:
        stub.capacity = limit
        judge: dict[str, Any] = {
            "openai": {"base_url": stub.url, "model": "bench-judge"},
            "cache": False,
        }
        if cap is not None:
            judge["max_concurrency"] = cap
        wall, summary = run(suite_path, tmp / name.replace(" ", "-"), judge)
        answered = len(stub.requests) - stub.refused
        allowed = min(CONCURRENCY, cap or 32, limit or 10**9)
        errored = sum(m["errored"] for m in summary["metrics"])
        ideal = answered * delay / allowed
        return {
            "configuration": name,
            "judge requests answered": answered,
            "refused (429)": stub.refused,
            "most in flight": stub.max_in_flight,
            "allowed": allowed,
            "ideal s": round(ideal, 2),
            "wall s": round(wall, 2),
            "ratio": round(wall / ideal, 2) if ideal else None,
            "errored": errored,
        }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=100)
    parser.add_argument("--delay", type=float, default=0.3)
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-judge-concurrency-") as folder:
        tmp = Path(folder)
        warm = suite(tmp / "warm.json", 4)
        measure("warm-up", warm, tmp, 0.0, None, None)  # imports, first-run costs
        path = suite(tmp / "suite.json", args.cases)
        for name, cap, limit, delay in (
            ("fixed 8 (old default)", 8, None, args.delay),
            ("adaptive (default)", None, None, args.delay),
            ("adaptive, endpoint limit 10", None, 10, args.delay),
            ("adaptive (default), instant judge: the run's own time", None, None, 0.0),
        ):
            rows.append(measure(name, path, tmp, delay, cap, limit))
            print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    keys = list(rows[0])
    print("| " + " | ".join(keys) + " |")
    print("|" + "---|" * len(keys))
    for row in rows:
        print("| " + " | ".join(str(row[k]) for k in keys) + " |")


if __name__ == "__main__":
    main()
