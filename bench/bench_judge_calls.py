"""LLM-judge calls and tokens per case for the five RAG metrics: evalrunner vs DeepEval vs Ragas
(issue #5, "Efficiency"; goal: at most half the calls and tokens of the cheaper peer).

No real LLM is called. Each tool runs the same fixed cases (bench/judge_peers/rag_cases.json,
built from the demo by bench/judge_peers/cases.py) against a counting fake judge that answers
every structured request with a plausible, schema-valid reply (bench/judge_peers/common.py):
- evalrunner: a ``Judge`` subclass that caches by (messages, schema) like the real client,
  cross-checked against the real client with only its transport faked;
- DeepEval: a ``DeepEvalBaseLLM`` subclass (DeepEval passes the pydantic schema it wants);
- Ragas: an ``InstructorBaseRagasLLM`` subclass for its ``metrics.collections`` API, plus a
  hash-based fake embedding for Answer Relevancy.
Tokens are estimated the same way for all three: len(text) / 4 for the prompt and for the
completion's compact JSON.

Each side runs in its own interpreter: evalrunner in the project venv, the peers in a venv of
their own (never install them into the project's), each in a fresh network namespace
(``unshare -n``) where the machine allows it, and with a socket guard that refuses and counts
every connection attempt.

Usage:
  python3 -m venv /tmp/peers-venv
  /tmp/peers-venv/bin/pip install -r bench/judge_peers/requirements.txt
  .venv/bin/python bench/bench_judge_calls.py [--peers-python /tmp/peers-venv/bin/python]
      [--distractors N] [--json FILE] [--markdown FILE] [--no-unshare]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
PEERS = ROOT / "bench" / "judge_peers"
sys.path.insert(0, str(PEERS))

from common import FIVE  # noqa: E402

SIDES = {
    "evalrunner": "run_evalrunner.py",
    "deepeval": "run_deepeval.py",
    "ragas": "run_ragas.py",
}
#: The run of each tool that the comparison uses (the tools' defaults).
PRIMARY = {
    "evalrunner": "five together (first run, empty cache)",
    "deepeval": "default (include_reason=True)",
    "ragas": "default (collections API)",
}
ENV = {
    "DEEPEVAL_TELEMETRY_OPT_OUT": "YES",
    "DEEPEVAL_UPDATE_WARNING_OPT_IN": "0",
    "DEEPEVAL_EVAL_MODE": "llm",
    "RAGAS_DO_NOT_TRACK": "true",
    "OPENAI_API_KEY": "sk-dummy-benchmark-never-used",
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "NO_PROXY": "*",
    "PYTHONDONTWRITEBYTECODE": "1",
}


def can_unshare() -> bool:
    if shutil.which("unshare") is None:
        return False
    try:
        return subprocess.run(["unshare", "-n", "true"], capture_output=True).returncode == 0
    except OSError:
        return False


def run_side(tool: str, python: str, cases: Path, unshare: bool, timeout: int) -> dict[str, Any]:
    """One tool in its own interpreter; its RESULT line, or why there is none."""
    if not Path(python).exists():
        return {"tool": tool, "not_run": f"interpreter {python} not found"}
    cmd = [python, str(PEERS / SIDES[tool])]
    if unshare:
        cmd = ["unshare", "-n", *cmd]
    env = {**os.environ, **ENV, "BENCH_JUDGE_CASES": str(cases)}
    with tempfile.TemporaryDirectory(prefix=f"bench-judge-{tool}-") as cwd:  # .deepeval etc.
        env["HOME"] = cwd if tool != "evalrunner" else env.get("HOME", cwd)
        try:
            proc = subprocess.run(
                cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout
            )
        except subprocess.TimeoutExpired:
            return {"tool": tool, "not_run": f"timed out after {timeout} s"}
    for line in reversed(proc.stdout.splitlines()):
        if line.startswith("RESULT "):
            result = json.loads(line[len("RESULT ") :])
            result["isolated_network_namespace"] = unshare
            return result
    tail = (proc.stderr or proc.stdout).strip().splitlines()[-12:]
    return {"tool": tool, "not_run": f"exit {proc.returncode}: " + " | ".join(tail)[-1500:]}


# --- reporting ------------------------------------------------------------------------------


def _f(x: float, digits: int = 0) -> str:
    return f"{x:,.{digits}f}"


def tool_table(result: dict[str, Any], run: str) -> list[str]:
    per = result["runs"][run]["summary"]["per_metric"]
    rows = [
        "| metric | calls | cached | input tokens | output tokens | total tokens |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for metric in [*FIVE, "TOTAL"]:
        m = per.get(metric)
        if m is None:
            rows.append(f"| {metric} | — | — | — | — | — |")
            continue
        name = f"**{metric}**" if metric == "TOTAL" else metric
        rows.append(
            f"| {name} | {_f(m['calls'], 2)} | {_f(m['cached_calls'], 2)} | "
            f"{_f(m['input_tokens'])} | {_f(m['output_tokens'])} | {_f(m['total_tokens'])} |"
        )
    emb = per["TOTAL"].get("embedding_texts", 0)
    if emb:
        rows.append(
            f"\n(plus {_f(emb, 1)} texts sent to the embedding model per case, "
            f"{_f(per['TOTAL']['embedding_tokens'])} tokens; not judge calls)"
        )
    return rows


def comparison(results: dict[str, dict[str, Any]]) -> tuple[list[str], dict[str, Any]]:
    totals: dict[str, dict[str, float]] = {}
    for tool, res in results.items():
        if "runs" in res:
            for run, data in res["runs"].items():
                if "summary" in data:
                    t = dict(data["summary"]["per_metric"]["TOTAL"])
                    t["with_schema"] = t["total_tokens"] + t.get("schema_tokens", 0.0)
                    totals[f"{tool}: {run}"] = t
    rows = [
        "| tool and configuration | calls / case | input tokens | output tokens | total tokens "
        "| total + schema sent by the native client |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for name, t in totals.items():
        rows.append(
            f"| {name} | {_f(t['calls'], 2)} | {_f(t['input_tokens'])} | "
            f"{_f(t['output_tokens'])} | {_f(t['total_tokens'])} | {_f(t['with_schema'])} |"
        )
    verdict: dict[str, Any] = {}
    ours = totals.get(f"evalrunner: {PRIMARY['evalrunner']}")
    defaults = {t: totals.get(f"{t}: {PRIMARY[t]}") for t in ("deepeval", "ragas")}
    defaults = {t: v for t, v in defaults.items() if v is not None}
    every = {name: t for name, t in totals.items() if not name.startswith("evalrunner")}
    if ours and defaults:
        rows += [
            "",
            "| measure | evalrunner | cheaper peer | ratio | goal ≤ 0.5 |",
            "|---|---:|---|---:|---|",
        ]
        measures = (
            ("calls", "calls / case", 2),
            ("total_tokens", "tokens / case (prompt text as each tool writes it)", 0),
            ("with_schema", "tokens / case, peers' schema added as their clients send it", 0),
        )
        for scope, peers in (("defaults", defaults), ("cheapest configuration", every)):
            for key, label, digits in measures:
                tool, best = min(peers.items(), key=lambda kv: kv[1][key])
                ratio = ours[key] / best[key] if best[key] else float("inf")
                verdict[f"{key} vs {scope}"] = {
                    "evalrunner": ours[key],
                    "peer": tool,
                    "peer_value": best[key],
                    "ratio": ratio,
                    "met": ratio <= 0.5,
                }
                rows.append(
                    f"| {label}, vs the peers' {scope} | {_f(ours[key], digits)} | {tool} "
                    f"{_f(best[key], digits)} | {ratio:.2f} | "
                    f"{'met' if ratio <= 0.5 else 'not met'} |"
                )
    return rows, verdict


def markdown(results: dict[str, dict[str, Any]], cases: list[dict], unshare: bool) -> str:
    k = sum(len(c["contexts"]) for c in cases) / len(cases)
    out = [f"{len(cases)} cases, {k:.2f} retrieved chunks per case on average.", ""]
    for tool, res in results.items():
        versions = ", ".join(f"{p} {v}" for p, v in res.get("versions", {}).items())
        out.append(f"### {tool} ({versions or 'not run'})")
        out.append("")
        if "not_run" in res:
            out.append(f"Not measured: {res['not_run']}")
            out.append("")
            continue
        out.append(
            f"Network: {res['network_attempt_count']} connection attempts"
            + (", in its own network namespace" if res.get("isolated_network_namespace") else "")
            + "."
        )
        for run, data in res["runs"].items():
            out.append("")
            out.append(f"{run}:")
            out.append("")
            if "unavailable" in data:
                out.append(f"unavailable: {data['unavailable']}")
                continue
            if "summary" in data:
                out += tool_table(res, run)
            if data.get("client_case_usage"):
                u = data["client_case_usage"]
                out.append("")
                out.append(
                    f"evalrunner's own per-case accounting (CaseUsage): {_f(u['calls'], 2)} "
                    f"calls, {_f(u['cached'], 2)} cached, {_f(u['input_tokens'])} input + "
                    f"{_f(u['output_tokens'])} output tokens per case."
                )
            if data.get("errors"):
                out.append(f"errors ({len(data['errors'])}): {data['errors'][:3]}")
        out.append("")
    rows, _ = comparison(results)
    out += ["### Comparison (totals per case for the five metrics)", "", *rows, ""]
    return "\n".join(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    default_project = ROOT / ".venv" / "bin" / "python"
    parser.add_argument(
        "--project-python",
        default=str(default_project if default_project.exists() else sys.executable),
    )
    parser.add_argument(
        "--peers-python", default=os.environ.get("PEERS_PYTHON", "/tmp/peers-venv/bin/python")
    )
    parser.add_argument(
        "--distractors",
        type=int,
        default=None,
        help="build cases with N chunks of other policies (default: the "
        "committed rag_cases.json, 2 per case)",
    )
    parser.add_argument("--only", choices=sorted(SIDES), action="append")
    parser.add_argument("--no-unshare", action="store_true")
    parser.add_argument("--timeout", type=int, default=600)
    parser.add_argument("--json", type=Path, help="write every side's raw result here")
    parser.add_argument("--markdown", type=Path, help="write the tables here too")
    args = parser.parse_args()

    unshare = not args.no_unshare and can_unshare()
    with tempfile.TemporaryDirectory(prefix="bench-judge-cases-") as tmp:
        cases_file = PEERS / "rag_cases.json"
        if args.distractors is not None:
            cases_file = Path(tmp) / "rag_cases.json"
            subprocess.run(
                [
                    args.project_python,
                    str(PEERS / "cases.py"),
                    "--distractors",
                    str(args.distractors),
                    "--out",
                    str(cases_file),
                ],
                check=True,
                capture_output=True,
            )
        cases = json.loads(cases_file.read_text(encoding="utf-8"))["cases"]
        results = {}
        for tool in args.only or list(SIDES):
            python = args.project_python if tool == "evalrunner" else args.peers_python
            print(f"running {tool} ({python}) ...", file=sys.stderr, flush=True)
            results[tool] = run_side(tool, python, cases_file, unshare, args.timeout)

    text = markdown(results, cases, unshare)
    print(text)
    if args.markdown:
        args.markdown.write_text(text + "\n", encoding="utf-8")
    if args.json:
        _, verdict = comparison(results)
        args.json.write_text(
            json.dumps({"results": results, "goal": verdict}, indent=1) + "\n", encoding="utf-8"
        )


if __name__ == "__main__":
    main()
