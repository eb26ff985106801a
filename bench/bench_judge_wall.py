"""The judge-bound run side by side, wall time included: evalrunner vs DeepEval vs Ragas.

100 cases (answers and contexts given) × the five RAG metrics, each tool as its users run it,
as a whole process (imports included), each with its own defaults and its concurrency knob at
the same N (20): ``evalrunner run --max-concurrency 20`` (judge limit: the adaptive default),
DeepEval ``evaluate(async_config=AsyncConfig(max_concurrent=20))`` (DeepEval's default is 20),
Ragas ``evaluate(run_config=RunConfig(max_workers=20))`` (Ragas' default is 16). Every tool's
own OpenAI client talks to one loopback judge (bench/judge_peers/loopback_judge.py) that
answers every request style each sends after ``--delay`` ± ``--jitter`` seconds; with
``--capacity K`` it answers 429 above K in flight.

Repetitions are interleaved (tool order reversed every other repetition). Peers run in their
own pinned environments (bench/peers.py's, under ~/.cache/evalrunner-bench/peers), in a
fresh network namespace (``unshare -n``, loopback only) with telemetry off, as bench/peers.py
runs them.

Per run: wall and CPU seconds of the whole process tree, peak RSS, judge calls, 429s,
embedding requests, prompt characters (every message's content) and schema characters (the
response_format / tools sent beside it), the most calls in flight, start-up (process start to
the first judge request), the call phase (first request to last answer) and the tail (last
answer to exit). The **ideal** of a run is what the judge alone allows: calls × delay /
allowed in flight, where allowed = the most calls the tool's own settings let be in flight at
once (see ``allowed_in_flight``), and never below the dependency chain: each case's
statements are answered before their verdicts are asked (2 rounds), and cases run in waves of
N: ideal = max(calls × delay / allowed, ceil(cases / N) × 2 × delay).

Usage: .venv/bin/python bench/bench_judge_wall.py [--cases 100] [--reps 3] [--delay 0.3]
       [--jitter 0.05] [--concurrency 20] [--capacity K] [--only evalrunner,deepeval,ragas]
       [--no-unshare]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path.insert(0, str(BENCH))
sys.path.insert(0, str(BENCH / "judge_peers"))

from loopback_judge import LoopbackJudge  # noqa: E402
from peers import ISOLATION_ENV, can_unshare, ensure_env, measure  # noqa: E402

FIVE = [
    "Faithfulness",
    "Answer Relevancy",
    "Contextual Precision",
    "Contextual Recall",
    "Contextual Relevancy",
]
TOOLS = ("evalrunner", "deepeval", "ragas")
#: Dependent judge rounds of one case: statements, then their verdicts.
ROUNDS = 2
PYTHON = str(ROOT / ".venv" / "bin" / "python")


def suite(path: Path, cases: int) -> Path:
    """The cases every tool reads: the committed RAG cases, every text varied per case so no
    ask repeats another case's (a judge cache, evalrunner's default, would answer it)."""
    base = json.loads((BENCH / "judge_peers/rag_cases.json").read_text())["cases"]
    rows = []
    for i in range(cases):
        case = base[i % len(base)]
        rows.append(
            {
                "id": f"case-{i:04d}",
                "question": f"{case['question']} (variant {i})",
                "expected_answer": f"{case['expected_answer']} (variant {i})",
                "actual_answer": f"{case['answer']} (variant {i})",
                "retrieved_contexts": json.dumps([f"{c} (variant {i})" for c in case["contexts"]]),
            }
        )
    path.write_text(json.dumps({"cases": rows}), encoding="utf-8")
    return path


def command(
    tool: str, exes: dict[str, Path], cases: Path, url: str, n: int, out: Path
) -> list[str]:
    if tool.startswith("evalrunner"):
        judge = {"openai": {"base_url": url, "model": "bench-judge"}}  # cache on: the default
        cmd = [PYTHON, "-m", "evalrunner.cli", "run", "--suite", str(cases)]
        cmd += ["--target", '{"lambdaArn": "evalrunner-demo-hr"}']
        for metric in FIVE:
            cmd += ["--metric", metric]
        cmd += ["--judge", json.dumps(judge), "--max-concurrency", str(n), "--out", str(out)]
        return [*cmd, "--json", "--quiet", "--no-preflight", "--fail-on", "errors"]
    script = BENCH / "judge_peers" / f"wall_{tool}.py"
    return [str(exes[tool]), str(script), str(cases), url, str(n)]


def scored(tool: str, stdout: str) -> tuple[int | None, int | None]:
    """(scores, errored metric results) the tool reported."""
    if tool.startswith("evalrunner"):
        try:
            summary = json.loads(stdout)
        except ValueError:
            return None, None
        metrics = summary.get("metrics") or []
        errored = sum(int(m.get("errored", 0)) for m in metrics)
        return sum(int(m.get("scored", m.get("count", 0))) for m in metrics), errored
    line = next((x for x in reversed(stdout.splitlines()) if x.startswith("RESULT ")), None)
    if line is None:
        return None, None
    got = json.loads(line[7:])
    return got["scored"], got["errored"]


def allowed_in_flight(tool: str, args: argparse.Namespace, seen: int) -> int:
    """Judge calls the tool's settings let be in flight at once. evalrunner: N cases at once,
    each with one call per judge metric in flight (one call at a time in a tree from before
    the metrics ran together: ``evalrunner-before``), under the judge cap (32). The peers'
    knobs bound tasks, not calls: the most the judge saw in flight."""
    if tool == "evalrunner":
        allowed = min(args.concurrency * len(FIVE), 32)
    elif tool == "evalrunner-before":
        allowed = min(args.concurrency, 32)
    else:
        allowed = seen or 1
    return min(allowed, args.capacity) if args.capacity else allowed


def run_one(
    tool: str, exes: dict[str, Path], judge: LoopbackJudge, args: argparse.Namespace, cases: Path
) -> dict[str, Any]:
    env = {**os.environ, **ISOLATION_ENV}
    if args.inside:  # the namespace isolates: no proxy variables, which cost DeepEval dearly
        # (it builds an OpenAI client per call, and httpx an SSL context per proxy mount:
        # ~4× its CPU), and a user of any of these tools would not have them set
        for key in [k for k in env if k.lower().endswith("_proxy")]:
            del env[key]
    with tempfile.TemporaryDirectory(prefix=f"judge-wall-{tool}-") as tmp:
        work = Path(tmp)
        code = args.before if tool == "evalrunner-before" else ROOT
        cwd = code if tool.startswith("evalrunner") else work
        if tool.startswith("evalrunner"):
            env["PYTHONPATH"] = str(code)
            # the judge cache on, as by default, but empty: no reply from an earlier run
            env["XDG_CACHE_HOME"] = str(work / "cache")
        else:
            env["HOME"] = str(work)  # a throw-away home: no ~/.deepeval, no caches kept
        judge.reset()
        cmd = command(tool, exes, cases, judge.url, args.concurrency, work / "out")
        got = measure(cmd, env, cwd, 900)
    stats = judge.stats()
    stdout, stderr = got.pop("stdout"), got.pop("stderr")
    started, ended = got.pop("started"), got.pop("ended")
    row: dict[str, Any] = {"tool": tool, **got, **stats}
    answered = stats["judge_calls"] - stats["refused_429"]
    row["allowed"] = allowed = allowed_in_flight(tool, args, stats["max_in_flight"])
    # the dependency chain: statements before their verdicts, cases in waves of N
    waves = -(-args.cases // args.concurrency)
    ideal = max(answered * args.delay / allowed, waves * ROUNDS * args.delay)
    row["ideal_s"] = round(ideal, 2)
    if judge.first and judge.last:
        row["startup_s"] = round(judge.first - started, 2)
        row["calls_s"] = round(judge.last - judge.first, 2)
        row["tail_s"] = round(ended - judge.last, 2)
        row["calls_vs_ideal"] = round((judge.last - judge.first) / ideal, 3) if ideal else None
    row["whole_vs_ideal"] = round(got["wall_s"] / ideal, 3) if ideal else None
    row["scored"], row["errored"] = scored(tool, stdout)
    if got["exit_code"] != 0 or row["scored"] is None:
        row["error"] = (stderr or stdout).strip()[-800:]
    return row


FIGURES = (
    "wall_s",
    "cpu_s",
    "peak_rss_mib",
    "judge_calls",
    "prompt_chars",
    "schema_chars",
    "embedding_requests",
    "max_in_flight",
    "startup_s",
    "calls_s",
    "tail_s",
    "calls_vs_ideal",
    "whole_vs_ideal",
    "errored",
)


def medians(rows: list[dict[str, Any]], tool: str) -> dict[str, float | None]:
    ok = [r for r in rows if r["tool"] == tool and "error" not in r]
    out: dict[str, float | None] = {}
    for key in FIGURES:
        values = [r[key] for r in ok if r.get(key) is not None]
        out[key] = round(statistics.median(values), 3) if values else None
    return out


def table(rows: list[dict[str, Any]], tools: list[str]) -> list[str]:
    med = {t: medians(rows, t) for t in tools}
    lines = ["| figure | " + " | ".join(tools) + " | "]
    lines[0] += " | ".join(f"evalrunner / {t}" for t in tools if t != "evalrunner") + " |"
    lines.append("|---" * (len(tools) + len(tools) - 1 + 1) + "|")
    for key in FIGURES:
        cells = [str(med[t][key]) if med[t][key] is not None else "—" for t in tools]
        ours = med.get("evalrunner", {}).get(key)
        for t in tools:
            if t == "evalrunner":
                continue
            theirs = med[t][key]
            cells.append(f"{ours / theirs:.2f}×" if ours is not None and theirs else "—")
        lines.append(f"| {key} | " + " | ".join(cells) + " |")
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", type=int, default=100)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--delay", type=float, default=0.3)
    parser.add_argument("--jitter", type=float, default=0.05)
    parser.add_argument("--concurrency", type=int, default=20)
    parser.add_argument("--capacity", type=int, default=None)
    parser.add_argument("--only", default=",".join(TOOLS))
    parser.add_argument(
        "--before",
        type=Path,
        help="another checkout (e.g. `git archive main | tar -x -C DIR`): adds its evalrunner "
        "as the tool `evalrunner-before`, run from that tree with this .venv",
    )
    parser.add_argument(
        "--cache", type=Path, default=Path.home() / ".cache" / "evalrunner-bench" / "peers"
    )
    parser.add_argument("--no-unshare", action="store_true")
    parser.add_argument("--inside", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    tools = [t for t in args.only.split(",") if t]
    if args.before:
        args.before = args.before.resolve()
        tools.insert(1, "evalrunner-before")
    exes: dict[str, Path] = {}
    for peer in (t for t in tools if not t.startswith("evalrunner")):
        exe, why = ensure_env(peer, args.cache, install=not args.inside)
        if exe is None:
            raise SystemExit(f"{peer} cannot run: {why}")
        exes[peer] = exe
    if not args.inside and not args.no_unshare and can_unshare():
        inner = [sys.executable, str(Path(__file__).resolve()), *sys.argv[1:], "--inside"]
        cmd = ["unshare", "-n", "sh", "-c", 'ip link set lo up && exec "$@"', "sh", *inner]
        return subprocess.run(cmd).returncode
    header = {
        "isolation": "network namespace (loopback only)" if args.inside else "environment only",
        "load_before": os.getloadavg(),
        "command": " ".join(a for a in sys.argv if a != "--inside"),
        "started": time.strftime("%H:%M:%S", time.gmtime()),
    }
    print(json.dumps(header), flush=True)
    rows: list[dict[str, Any]] = []
    with (
        tempfile.TemporaryDirectory(prefix="judge-wall-") as tmp,
        LoopbackJudge(args.delay, args.jitter, args.capacity) as judge,
    ):
        cases = suite(Path(tmp) / "cases.json", args.cases)
        for rep in range(args.reps):
            for tool in tools if rep % 2 == 0 else list(reversed(tools)):
                row = run_one(tool, exes, judge, args, cases)
                row["rep"] = rep + 1
                rows.append(row)
                print(json.dumps(row), flush=True)
    print(json.dumps({"load_after": os.getloadavg()}))
    print()
    print(f"medians of {args.reps} interleaved repetitions, {args.cases} cases:")
    print("\n".join(table(rows, tools)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
