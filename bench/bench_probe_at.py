"""What a run has spent when its pre-flight probe starts (issue 31 goals 1 and 3).

Everything before the probe is on the path of every run: the probe waits on the target while
the engine's libraries load, and no case starts before it answers. Each run here is a fresh
process of ``evalrunner run`` (5 cases, one metric, an instant loopback target in this
script's process, reports written) with a wrapper around ``launch.start_preflight`` that
prints the process's CPU seconds, the wall seconds since its launch and the modules loaded
at that moment; then the whole run's CPU and wall. The trees take turns
(interleaved), each on this interpreter with the venv's editable-install finder set aside, as
bench_startup.py runs them.

Usage: python bench/bench_probe_at.py --base /tmp/before [--repeat 4] [--metric "Rouge Metric"]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from http.server import ThreadingHTTPServer
from pathlib import Path

from bench_startup import ROOT, Answer

#: One run: the CLI from the tree given first, the probe's moment printed on stderr.
CHILD = """
import json, runpy, sys, time
sys.meta_path[:] = [f for f in sys.meta_path
                    if not getattr(f, "__module__", "").startswith("__editable__")]
sys.path.insert(0, sys.argv[1])
import evalrunner.launch as launch
original = launch.start_preflight
def start_preflight(*args, **kwargs):
    sys.stderr.write("AT_PROBE " + json.dumps({"cpu": time.process_time(),
        "wall": time.time(), "modules": len(sys.modules)}) + "\\n")
    return original(*args, **kwargs)
launch.start_preflight = start_preflight
sys.argv = ["evalrunner", *sys.argv[2:]]
try:
    runpy.run_module("evalrunner.cli", run_name="__main__", alter_sys=True)
finally:
    sys.stderr.write("AT_END " + json.dumps({"cpu": time.process_time(),
        "wall": time.time()}) + "\\n")
"""


def one(tree: str, args: list[str]) -> dict[str, float]:
    started = time.time()
    done = subprocess.run(
        [sys.executable, "-c", CHILD, tree, *args],
        cwd=tree,
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    lines = {
        line.split(" ", 1)[0]: json.loads(line.split(" ", 1)[1])
        for line in done.stderr.splitlines()
        if line.startswith(("AT_PROBE ", "AT_END "))
    }
    if done.returncode != 0 or "AT_PROBE" not in lines:
        raise SystemExit(f"{tree}: exit {done.returncode}\n{done.stderr[-2000:]}")
    probe, end = lines["AT_PROBE"], lines["AT_END"]
    return {
        "probe_cpu": probe["cpu"],
        "probe_wall": probe["wall"] - started,
        "modules": probe["modules"],
        "cpu": end["cpu"],
        "wall": end["wall"] - started,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", required=True, help="the other tree's root")
    parser.add_argument("--repeat", type=int, default=4)
    parser.add_argument("--metric", default="Rouge Metric")
    args = parser.parse_args()
    server = ThreadingHTTPServer(("127.0.0.1", 0), Answer)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    trees = {"before": str(Path(args.base).resolve()), "after": str(ROOT)}
    runs: dict[str, list[dict[str, float]]] = {name: [] for name in trees}
    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="bench-probe-at-") as folder:
        suite = Path(folder) / "five.csv"
        rows = [f"c{i},What is item {i}?,The answer to What is item {i}? is 42." for i in range(5)]
        suite.write_text("id,question,expected_answer\n" + "\n".join(rows) + "\n", "utf-8")
        target = json.dumps({"url": f"http://127.0.0.1:{server.server_port}/"})
        for rep in range(args.repeat):
            order = list(trees.items()) if rep % 2 == 0 else list(trees.items())[::-1]
            for name, tree in order:
                out = Path(folder) / f"out-{name}-{rep}"
                command = ["run", "--suite", str(suite), "--target", target, "--metric"]
                command += [args.metric, "--out", str(out), "--quiet", "--fail-on", "errors"]
                runs[name].append(one(tree, command))
                print(
                    json.dumps(
                        {"tree": name, **{k: round(v, 3) for k, v in runs[name][-1].items()}}
                    )
                )
    server.shutdown()
    print(f"load average {load:.2f} -> {os.getloadavg()[0]:.2f}; medians:")
    print("| tree | CPU at the probe s | wall at the probe s | modules | run CPU s | run wall s |")
    print("|---|---|---|---|---|---|")
    for name, figures in runs.items():
        cells = [statistics.median(f[k] for f in figures) for k in figures[0]]
        cpu, wall, modules, run_cpu, run_wall = cells
        print(
            f"| {name} | {cpu:.2f} | {wall:.2f} | {modules:.0f} | {run_cpu:.2f} | {run_wall:.2f} |"
        )


if __name__ == "__main__":
    main()
