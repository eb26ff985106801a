"""A judge-bound run against its ideal at the allowed concurrency (issue 31 goal 5).

100 cases (answers and contexts given, so no target is called) × the five RAG metrics, judged
by the loopback judge stub (tests/support/judge_stub.py) answering every request in
``--delay`` seconds with a schema-valid reply built from the request's own json_schema, run
through the CLI (``evalrunner run``, in this process, after a warm-up run that pays the
imports) at ``--max-concurrency 20``. Each configuration gets its own stub (its own endpoint,
so its own adaptive limiter) and no judge cache.

The ideal is what the judge alone allows, given the run's settings and the calls' dependency
chain: max(judge requests × delay / allowed, waves × ROUNDS × delay), where allowed = the
calls that may be in flight = min(cases at once × calls a case may have in flight, judge cap,
the endpoint's own limit) — a case's judge metrics run together, so a case may have one call
per metric in flight (``--sequential-metrics``: one, for a tree from before that change) —
and the second term is the dependency chain: a case's statements must be answered before
their verdicts are asked (ROUNDS = 2), and the cases run in waves of ``cases at once``.
Ratio = wall / ideal. The breakdown says where the rest goes (start-up before the first
judge request, the ramp to ``allowed`` in flight, slots left idle in between, the drain
after the last moment ``allowed`` were in flight, the tail after the last answer).

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
#: Dependent judge rounds of one case: statements, then their verdicts.
ROUNDS = 2
#: Calls one case may have in flight (one per judge metric; 1 with --sequential-metrics).
PER_CASE = len(FIVE)


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


def responder(delay: float, arrivals: list[float]) -> Any:
    def answer(messages: list[dict[str, Any]], request: dict[str, Any]) -> StubReply:
        arrivals.append(time.monotonic())  # list.append is atomic: server threads share it
        schema = request["response_format"]["json_schema"]["schema"]
        return StubReply(schema_instance(schema, "value", LEAVES), delay=delay)

    return answer


def breakdown(
    arrivals: list[float], delay: float, allowed: int, started: float, ended: float
) -> dict[str, float]:
    """Where the wall time goes, from the judge's side (each answered request is in flight
    from its arrival for ``delay``): start-up before the first request, the ramp (first
    request until ``allowed`` are in flight), the steady phase's lost slot-seconds (÷
    allowed: seconds of the whole judge idle), the drain (the last time ``allowed`` were in
    flight until the last answer) and the tail after it."""
    if not arrivals or not delay:
        return {}
    events = sorted([(t, 1) for t in arrivals] + [(t + delay, -1) for t in arrivals])
    level, full_first, full_last = 0, None, None
    for t, step in events:
        level += step
        if level >= allowed:
            full_first = t if full_first is None else full_first
            full_last = t
    first, last = min(arrivals), max(arrivals) + delay
    ramp_end = full_first if full_first is not None else first
    drain_start = full_last if full_last is not None else last
    # slot-seconds unused between the ramp and the drain
    level, prev, idle = 0, first, 0.0
    for t, step in events:
        lo, hi = max(prev, ramp_end), min(t, drain_start)
        if hi > lo:
            idle += (allowed - min(level, allowed)) * (hi - lo)
        level += step
        prev = t
    return {
        "start-up s": round(first - started, 2),
        "ramp s": round(ramp_end - first, 2),
        "steady loss s": round(idle / allowed, 2),
        "drain s": round(last - drain_start, 2),
        "tail s": round(ended - last, 2),
        "mean in flight": round(len(arrivals) * delay / (last - first), 1),
    }


def run(
    suite_path: Path, out: Path, judge: dict[str, Any]
) -> tuple[float, float, float, dict[str, Any]]:
    args = ["run", "--suite", str(suite_path), "--target", '{"lambdaArn": "evalrunner-demo-hr"}']
    for metric in FIVE:
        args += ["--metric", metric]
    args += ["--judge", json.dumps(judge), "--max-concurrency", str(CONCURRENCY)]
    args += ["--out", str(out), "--json", "--quiet", "--no-preflight", "--fail-on", "errors"]
    start = time.monotonic()
    result = CliRunner().invoke(app, args, catch_exceptions=False)
    ended = time.monotonic()
    if result.exit_code != 0:
        raise SystemExit(f"run failed ({result.exit_code}): {result.output[-2000:]}")
    return ended - start, start, ended, json.loads(result.stdout)


def measure(
    name: str, suite_path: Path, tmp: Path, delay: float, cap: int | None, limit: int | None
) -> dict[str, Any]:
    arrivals: list[float] = []
    with JudgeStub(responder(delay, arrivals)) as stub:
        stub.capacity = limit
        judge: dict[str, Any] = {
            "openai": {"base_url": stub.url, "model": "bench-judge"},
            "cache": False,
        }
        if cap is not None:
            judge["max_concurrency"] = cap
        wall, started, ended, summary = run(suite_path, tmp / name.replace(" ", "-"), judge)
        answered = len(stub.requests) - stub.refused
        allowed = min(CONCURRENCY * PER_CASE, cap or 32, limit or 10**9)
        errored = sum(m["errored"] for m in summary["metrics"])
        cases = len(json.loads(suite_path.read_text())["cases"])
        waves = -(-cases // CONCURRENCY)
        ideal = max(answered * delay / allowed, waves * ROUNDS * delay)
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
            **breakdown(arrivals, delay, allowed, started, ended),
        }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=100)
    parser.add_argument("--delay", type=float, default=0.3)
    parser.add_argument(
        "--sequential-metrics",
        action="store_true",
        help="a tree whose cases ask one judge call at a time: allowed = min(cases, cap)",
    )
    args = parser.parse_args()
    global PER_CASE
    PER_CASE = 1 if args.sequential_metrics else PER_CASE

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
    keys = list(dict.fromkeys(k for row in rows for k in row))
    print("| " + " | ".join(keys) + " |")
    print("|" + "---|" * len(keys))
    for row in rows:
        print("| " + " | ".join(str(row.get(k, "—")) for k in keys) + " |")


if __name__ == "__main__":
    main()
