"""evalrunner side by side with Ragas, DeepEval and promptfoo on issue 31's workloads: one
command, one ratio table (evalrunner / peer, lower is better for evalrunner).

Workloads (bench/peers_workloads.py defines them; ``--quick`` runs smaller sizes):
- ``small``: 5 cases against a loopback target, ROUGE; the whole process (start-up, imports,
  reports): evalrunner's CLI vs promptfoo's ``eval`` (``rouge-n`` assertion) vs Ragas
  ``evaluate()`` (handed the answers: Ragas calls no target);
- ``io``: 300 cases, the target answering each case in a seeded 0.5-1.5 s, concurrency 20:
  the whole run and the call phase (first request to last answer) against the ideal (the
  served latencies / 20), evalrunner vs promptfoo;
- ``lexical``: 2,000 cases, HTTP target answering at once, ROUGE + BLEU, reports written:
  evalrunner's CLI vs Ragas ``evaluate()`` (whole process, imports included) vs the floor
  (bench/peer_envs/floor.py: a plain rouge-score + nltk loop);
- ``judge``: the five RAG metrics against the counting fake judges of bench/bench_judge_calls.py
  (bench/judge_peers/): judge calls and prompt characters per case, evalrunner vs DeepEval vs
  Ragas (their wall time is not compared here: each side runs several scenarios).

Each peer has an environment of its own, created on first use under
``~/.cache/evalrunner-bench/peers/`` (``--cache DIR``) from files committed under
bench/peer_envs/ and reused while those files are unchanged: ``ragas`` and ``deepeval`` are
venvs installed from the exact pins of ``*-lock.txt``; ``promptfoo`` is ``npm ci`` of the
committed package.json + package-lock.json (promptfoo pinned exactly). A peer that cannot be
installed is reported as missing with the reason; its cells say ``missing``, never a number.

Network isolation: the measurements run in a fresh network namespace (``unshare -n`` with only
loopback up) where the machine allows it, so no tool can reach anything but the loopback
servers this script starts; everywhere, telemetry and update checks are switched off by
environment (``ISOLATION_ENV``) and proxies point at a closed loopback port.

Repetitions are interleaved (rep 1: evalrunner then the peers; rep 2: the peers then
evalrunner; ...), one process at a time; the table shows medians. Raw results are printed as
JSON lines first.

Usage:
  .venv/bin/python bench/peers.py [--quick] [--reps N] [--only small,io,lexical,judge]
      [--code DIR] [--cache DIR] [--no-unshare]
  # before/after: git worktree add /tmp/before REV
  .venv/bin/python bench/peers.py --code /tmp/before
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import platform
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from http.server import ThreadingHTTPServer
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
ENVS = BENCH / "peer_envs"
sys.path.insert(0, str(BENCH))

import peers_workloads as wl  # noqa: E402
from bench_io import Target, handler_for, tree_rss_kib  # noqa: E402

#: Telemetry, update checks and outside traffic off for every tool (ours included).
ISOLATION_ENV = {
    "DO_NOT_TRACK": "1",
    "DEEPEVAL_TELEMETRY_OPT_OUT": "YES",
    "DEEPEVAL_UPDATE_WARNING_OPT_IN": "0",
    "DEEPEVAL_EVAL_MODE": "llm",
    "RAGAS_DO_NOT_TRACK": "true",
    "PROMPTFOO_DISABLE_TELEMETRY": "1",
    "PROMPTFOO_DISABLE_UPDATE": "1",
    "PROMPTFOO_DISABLE_SHARING": "1",
    "PROMPTFOO_DISABLE_REMOTE_GENERATION": "true",
    "PROMPTFOO_DISABLE_REDTEAM_REMOTE_GENERATION": "true",
    "HF_HUB_OFFLINE": "1",
    "HF_HUB_DISABLE_TELEMETRY": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "HTTP_PROXY": "http://127.0.0.1:9",
    "HTTPS_PROXY": "http://127.0.0.1:9",
    "ALL_PROXY": "http://127.0.0.1:9",
    "http_proxy": "http://127.0.0.1:9",
    "https_proxy": "http://127.0.0.1:9",
    "NO_PROXY": "127.0.0.1,localhost",
    "no_proxy": "127.0.0.1,localhost",
    "OPENAI_API_KEY": "sk-dummy-benchmark-never-used",
}

MISSING_VAR = "EVALRUNNER_PEERS_MISSING"
VENV_PEERS = {"ragas": ENVS / "ragas-lock.txt", "deepeval": ENVS / "deepeval-lock.txt"}
PROMPTFOO_FILES = (ENVS / "promptfoo" / "package.json", ENVS / "promptfoo" / "package-lock.json")


# --- environments ---------------------------------------------------------------------------


def _digest(paths: tuple[Path, ...]) -> str:
    h = hashlib.sha256()
    for path in paths:
        h.update(path.read_bytes())
    return h.hexdigest()


def _tail(proc: subprocess.CompletedProcess[str]) -> str:
    return " | ".join((proc.stderr or proc.stdout or "").strip().splitlines()[-6:])[-800:]


def ensure_env(peer: str, cache: Path, install: bool) -> tuple[Path | None, str]:
    """The executable of ``peer``'s environment, installing it if ``install`` and its committed
    pins changed; (None, why) where it cannot be had."""
    files = (VENV_PEERS[peer],) if peer in VENV_PEERS else PROMPTFOO_FILES
    home = cache / peer
    stamp = home / ".pins-sha256"
    exe = home / "bin" / "python" if peer in VENV_PEERS else home / "node_modules/.bin/promptfoo"
    wanted = _digest(files)
    if stamp.exists() and stamp.read_text() == wanted and exe.exists():
        return exe, ""
    if not install:
        return None, f"{peer}: environment not installed at {home}"
    print(f"[peers] installing {peer} into {home} from {', '.join(f.name for f in files)}")
    try:
        home.mkdir(parents=True, exist_ok=True)
        if peer not in VENV_PEERS:
            for f in files:
                shutil.copy(f, home / f.name)
    except OSError as exc:
        return None, f"{peer}: cannot prepare {home}: {exc}"
    if peer in VENV_PEERS:
        steps = [["python3", "-m", "venv", str(home)]]
        steps.append([str(exe), "-m", "pip", "install", "-q", "-r", str(files[0])])
    else:
        steps = [["npm", "ci", "--no-audit", "--no-fund", "--loglevel=error"]]
    for step in steps:
        try:
            proc = subprocess.run(step, cwd=home, capture_output=True, text=True, timeout=1200)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return None, f"{peer}: {' '.join(step[:3])} failed: {exc}"
        if proc.returncode != 0:
            return None, f"{peer}: {' '.join(step[:3])} exited {proc.returncode}: {_tail(proc)}"
    stamp.write_text(wanted)
    return exe, ""


def versions(exes: dict[str, Path], python: str, code: Path) -> dict[str, str]:
    out = {"python": platform.python_version(), "machine": platform.machine()}
    rev = subprocess.run(["git", "-C", str(code), "rev-parse", "--short", "HEAD"], **_quiet())
    out["evalrunner"] = f"{code} @ {rev.stdout.strip() or '?'}"
    node = shutil.which("node")
    if node:
        out["node"] = subprocess.run([node, "--version"], **_quiet()).stdout.strip()
    for peer, package in (("ragas", "ragas"), ("deepeval", "deepeval")):
        if peer in exes:
            probe = f"from importlib.metadata import version; print(version('{package}'))"
            got = subprocess.run([str(exes[peer]), "-c", probe], **_quiet()).stdout.strip()
            out[peer] = got or "?"
    if "promptfoo" in exes:
        lock = json.loads(PROMPTFOO_FILES[1].read_text())
        out["promptfoo"] = lock["packages"]["node_modules/promptfoo"]["version"]
    return out


def _quiet() -> dict[str, Any]:
    return {"capture_output": True, "text": True, "timeout": 120}


# --- one measured process -------------------------------------------------------------------


def measure(cmd: list[str], env: dict[str, str], cwd: Path, timeout: float) -> dict[str, Any]:
    """Run ``cmd`` to its end: wall and CPU seconds (its whole process tree, as rusage of the
    children reaped) and peak resident MiB of the tree (sampled every 50 ms)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.monotonic()
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        child = subprocess.Popen(cmd, env=env, cwd=cwd, stdout=out, stderr=err, text=True)
        peak = 0
        while child.poll() is None:
            peak = max(peak, tree_rss_kib(child.pid))
            if time.monotonic() - started > timeout:
                child.kill()
            time.sleep(0.05)
        ended = time.monotonic()
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read(), err.read()
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    return {
        "exit_code": child.returncode,
        "started": started,
        "ended": ended,
        "wall_s": round(ended - started, 2),
        "cpu_s": round(cpu, 2),
        "peak_rss_mib": round(peak / 1024),
        "stdout": stdout,
        "stderr": stderr,
    }


class CaseTarget(Target):
    """bench_io's loopback target, answering case i after ``latency_for(i)`` with the answer
    the lexical peers are handed, and timing case requests only."""

    def __init__(self, workload: wl.Workload) -> None:
        super().__init__(workload.low, workload.high)
        self.workload = workload

    def latency(self, question: str = "") -> float:
        i = wl.case_index(question)
        return self.low if i is None else wl.latency_for(i, self.low, self.high)

    def answer(self, question: str) -> str:
        return wl.answer(question)


@contextlib.contextmanager
def serving(workload: wl.Workload) -> Iterator[tuple[CaseTarget, str]]:
    target = CaseTarget(workload)
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler_for(target))
    server.daemon_threads = True
    server.request_queue_size = 1024
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield target, f"http://127.0.0.1:{server.server_port}/"
    finally:
        target.stopping.set()
        server.shutdown()
        server.server_close()


# --- the tools' commands --------------------------------------------------------------------


def suite_csv(path: Path, n: int) -> None:
    lines = ["id,question,expected_answer"]
    lines += [f"c{i},{wl.question(i)},{wl.reference(i)}" for i in range(n)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def rows_json(path: Path, n: int) -> None:
    rows = [
        {
            "question": wl.question(i),
            "reference": wl.reference(i),
            "response": wl.answer(wl.question(i)),
        }
        for i in range(n)
    ]
    path.write_text(json.dumps(rows), encoding="utf-8")


def evalrunner_cmd(python: str, work: Path, url: str, w: wl.Workload, n: int) -> list[str]:
    metrics = {"small": ["Rouge Metric"], "io": ["Exact match"]}.get(
        w.key, ["Rouge Metric", "BLEU"]
    )
    suite_csv(work / "suite.csv", n)
    target = json.dumps({"url": url, "timeout_seconds": w.high + 30})
    cmd = [python, "-m", "evalrunner.cli", "run", "--suite", str(work / "suite.csv")]
    cmd += ["--target", target, "--max-concurrency", str(w.concurrency)]
    cmd += ["--out", str(work / "out"), "--quiet", "--fail-on", "errors"]
    for metric in metrics:
        cmd += ["--metric", metric]
    if w.key == "io":  # the call phase is the cases' calls (promptfoo makes no probe either)
        cmd.append("--no-preflight")
    return cmd


def promptfoo_cmd(exe: Path, work: Path, url: str, w: wl.Workload, n: int) -> list[str]:
    """promptfoo's ``eval`` against the same target: its HTTP provider posts the question, the
    answer is read from the JSON reply; ``rouge-n`` (small) or ``equals`` (io) per case."""

    def check(i: int) -> dict[str, Any]:
        if w.key == "small":
            return {"type": "rouge-n", "value": wl.reference(i), "threshold": 0.0}
        return {"type": "equals", "value": wl.answer(wl.question(i))}

    config = {
        "description": f"bench/peers.py {w.key}",
        "prompts": ["{{question}}"],
        "providers": [
            {
                "id": url,
                "config": {
                    "method": "POST",
                    "headers": {"Content-Type": "application/json"},
                    "body": {"question": "{{prompt}}"},
                    "transformResponse": "json.answer",
                },
            }
        ],
        "tests": [{"vars": {"question": wl.question(i)}, "assert": [check(i)]} for i in range(n)],
    }
    (work / "promptfooconfig.yaml").write_text(json.dumps(config), encoding="utf-8")
    cmd = [str(exe), "eval", "-c", str(work / "promptfooconfig.yaml"), "--no-cache"]
    cmd += ["--no-progress-bar", "--no-table", "--no-write", "-j", str(w.concurrency)]
    return [*cmd, "-o", str(work / "results.json")]


def judge_figures(stdout: str, tool: str) -> dict[str, Any]:
    sys.path.insert(0, str(BENCH))
    from bench_judge_calls import PRIMARY

    line = next((x for x in reversed(stdout.splitlines()) if x.startswith("RESULT ")), None)
    if line is None:
        return {"exit_code": 3}
    total = json.loads(line[7:])["runs"][PRIMARY[tool]]["summary"]["per_metric"]["TOTAL"]
    return {
        "calls_per_case": round(total["calls"], 2),
        # common.est_tokens is len(text) / 4: the characters are the estimate times four
        "prompt_chars_per_case": round(total["input_tokens"] * 4),
    }


def run_one(
    w: wl.Workload, tool: str, exes: dict[str, Path], python: str, code: Path, quick: bool
) -> dict[str, Any]:
    n = w.size(quick)
    if w.key == "judge":  # the committed cases every side of bench_judge_calls reads
        cases = json.loads((BENCH / "judge_peers" / "rag_cases.json").read_text())["cases"]
        n = len(cases)
    row: dict[str, Any] = {"workload": w.key, "tool": tool, "cases": n}
    env = {**os.environ, **ISOLATION_ENV}
    with (
        tempfile.TemporaryDirectory(prefix=f"peers-{w.key}-{tool}-") as tmp,
        serving(w) as (
            target,
            url,
        ),
    ):
        work = Path(tmp)
        env["HOME"] = str(work) if tool != "evalrunner" else env.get("HOME", str(work))
        env["PROMPTFOO_CONFIG_DIR"] = str(work / ".promptfoo")
        cwd = work
        if tool == "evalrunner" and w.key != "judge":
            cmd, cwd = evalrunner_cmd(python, work, url, w, n), code
            env["PYTHONPATH"] = str(code)
        elif tool == "promptfoo":
            cmd = promptfoo_cmd(exes[tool], work, url, w, n)
        elif w.key == "judge":
            script = {"evalrunner": "run_evalrunner.py", "deepeval": "run_deepeval.py"}
            exe = python if tool == "evalrunner" else str(exes[tool])
            cmd = [exe, str(BENCH / "judge_peers" / script.get(tool, "run_ragas.py"))]
            if tool == "evalrunner":
                env["PYTHONPATH"] = str(code)
        else:  # ragas / floor: handed the answers, as their users do
            rows_json(work / "rows.json", n)
            if tool == "floor":
                cmd = [python, str(ENVS / "floor.py"), str(work / "rows.json")]
            else:
                cmd = [str(exes[tool]), str(BENCH / "scorer_peers" / "ragas_lexical.py")]
                cmd += [str(work / "rows.json")] + (["rouge"] if w.key == "small" else [])
        got = measure(cmd, env, cwd, timeout=900)
    stdout, stderr = got.pop("stdout"), got.pop("stderr")
    started, ended = got.pop("started"), got.pop("ended")
    row.update(got)
    if w.key == "judge":
        row.update(judge_figures(stdout, tool) if got["exit_code"] == 0 else {})
        row["wall_s"] = row["cpu_s"] = row["peak_rss_mib"] = None  # several scenarios a side
    elif target.requests:
        row["requests"] = target.requests
        row["peak_in_flight"] = target.peak
    if w.key == "io" and target.first and target.last:
        ideal = w.ideal(quick)
        row["ideal_s"] = round(ideal, 2)
        row["startup_s"] = round(target.first - started, 2)
        row["tail_s"] = round(ended - target.last, 2)
        row["whole_vs_ideal"] = round((ended - started) / ideal, 3)
        row["calls_vs_ideal"] = round((target.last - target.first) / ideal, 3)
    if got["exit_code"] != 0:
        row["error"] = (stderr or stdout).strip()[-600:]
    return row


# --- the whole comparison -------------------------------------------------------------------


def _shown(path: str) -> str:
    """``path`` relative to the checkout where it lies inside it (the venv's python)."""
    with contextlib.suppress(ValueError):
        return str(Path(path).relative_to(ROOT))
    return path


def can_unshare() -> bool:
    if shutil.which("unshare") is None or shutil.which("ip") is None:
        return False
    probe = ["unshare", "-n", "ip", "link", "set", "lo", "up"]
    with contextlib.suppress(OSError, subprocess.TimeoutExpired):
        return subprocess.run(probe, capture_output=True, timeout=30).returncode == 0
    return False


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", default=",".join(wl.WORKLOADS), help="workloads, comma-separated")
    parser.add_argument("--reps", type=int, default=3, help="interleaved repetitions (median)")
    parser.add_argument("--quick", action="store_true", help="smaller sizes, one repetition")
    parser.add_argument("--code", type=Path, default=ROOT, help="the evalrunner checkout to run")
    parser.add_argument(
        "--python",
        default=str(ROOT / ".venv" / "bin" / "python")
        if (ROOT / ".venv" / "bin" / "python").exists()
        else sys.executable,
        help="the interpreter that runs evalrunner (and the floor)",
    )
    parser.add_argument(
        "--cache", type=Path, default=Path.home() / ".cache" / "evalrunner-bench" / "peers"
    )
    parser.add_argument("--no-unshare", action="store_true", help="isolate by environment only")
    parser.add_argument("--inside", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    unknown = set(args.only.split(",")) - set(wl.WORKLOADS)
    if unknown:
        parser.error(
            f"--only: unknown workload(s) {sorted(unknown)}; choose from {list(wl.WORKLOADS)}"
        )
    if args.quick and "--reps" not in (argv or sys.argv):
        args.reps = 1
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    workloads = [wl.WORKLOADS[k] for k in args.only.split(",")]
    wanted = sorted({p for w in workloads for p in w.peers if p != "floor"})
    exes: dict[str, Path] = {}
    # why a peer is missing, as the install outside the namespace found it
    missing: dict[str, str] = json.loads(os.environ.get(MISSING_VAR, "{}")) if args.inside else {}
    for peer in wanted:
        exe, why = ensure_env(peer, args.cache, install=not args.inside)
        if exe is None:
            missing.setdefault(peer, why)
            if not args.inside:
                print(f"[peers] MISSING {why}", file=sys.stderr)
        else:
            exes[peer] = exe
    if not args.inside and not args.no_unshare and can_unshare():
        inner = [sys.executable, str(Path(__file__).resolve()), *(argv or sys.argv[1:]), "--inside"]
        script = 'ip link set lo up && exec "$@"'
        env = {**os.environ, MISSING_VAR: json.dumps(missing)}
        cmd = ["unshare", "-n", "sh", "-c", script, "sh", *inner]
        return subprocess.run(cmd, env=env).returncode
    isolation = "network namespace (loopback only)" if args.inside else "environment only"
    code = args.code.resolve()
    header = {
        "versions": versions(exes, args.python, code),
        "load_before": os.getloadavg(),
        "isolation": isolation,
        "quick": args.quick,
        "reps": args.reps,
        "command": " ".join(
            [_shown(sys.executable), "bench/peers.py"]
            + [a for a in (argv or sys.argv[1:]) if a != "--inside"]
        ),
    }
    print(json.dumps(header), flush=True)
    rows: list[dict[str, Any]] = []
    for rep in range(args.reps):
        for w in workloads:
            tools = ["evalrunner", *w.peers]
            for tool in tools if rep % 2 == 0 else list(reversed(tools)):
                if tool in missing:
                    row = {"workload": w.key, "tool": tool, "missing": missing[tool]}
                else:
                    row = run_one(w, tool, exes, args.python, code, args.quick)
                row["rep"] = rep + 1
                rows.append(row)
                print(json.dumps(row), flush=True)
    print(json.dumps({"load_after": os.getloadavg()}))
    print()
    print("evalrunner / peer (median of each side's repetitions; below 1 = evalrunner ahead):")
    print("\n".join(wl.ratio_table(rows, workloads)))
    print()
    print("each tool's medians:")
    print("\n".join(wl.medians_table(rows, workloads)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
