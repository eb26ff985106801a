"""The viewer's time to first render and its memory (issue 33).

Makes a folder of RUNS runs (the summary of one real ``evalrunner demo`` run copied under
RUNS run ids, targets and dates) and one run of CASES cases (the demo's rows repeated under new
case ids, written as Aggregate writes report.json), starts ``evalrunner view --no-browser``
in its own process, and times, from a fresh server each:

* the runs page (``/``): every summary read and parsed for the first time;
* the large run's page (``/runs/<id>``): its report.json parsed, the first 50 rows of its
  case table rendered; then a later page of the table and a filtered, sorted one (warm).

The server's RSS (VmRSS now, VmHWM its peak) is read from /proc after the pages.

    python bench/bench_viewer.py            # 1,000 runs, a 10,000-case run
    python bench/bench_viewer.py --runs 100 --cases 1000
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from evalrunner.reports.model import ReportData
from evalrunner.reports.summary import RunSummary


def make_runs(out: Path, runs: int, cases: int) -> tuple[str, str]:
    subprocess.run(
        [sys.executable, "-m", "evalrunner.cli", "demo", "--out", str(out)],
        check=False,
        capture_output=True,
    )
    (summary_path,) = out.glob("test-reports/*/*-summary.json")
    summary = RunSummary.model_validate_json(summary_path.read_bytes())
    report = ReportData.model_validate_json(
        summary_path.with_name(summary_path.name.replace("summary", "report")).read_bytes()
    )
    for n in range(runs):
        target = f"target-{n % 10}"
        folder = out / "test-reports" / target
        folder.mkdir(parents=True, exist_ok=True)
        stamp = f"25{(n // 28) % 12 + 1:02d}{n % 28 + 1:02d}-{n % 24:02d}0000"
        copy = summary.model_copy(
            update={"run_id": f"{stamp}-{n:06d}", "target": target, "started_at": stamp}
        )
        (folder / f"{stamp}-{n:04d}-summary.json").write_text(copy.model_dump_json(), "utf-8")
    rows = [
        report.rows[n % len(report.rows)].model_copy(update={"case_id": f"case-{n:05d}"})
        for n in range(cases)
    ]
    # an id of the form a run is given (its start stamp, then random hex: new_run_id)
    big_id = "260101-000000-b19b19"
    big = report.model_copy(update={"rows": rows, "run_id": big_id, "target": "big"})
    folder = out / "test-reports" / "big"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "260101-000000-report.json").write_bytes(
        ReportData.__pydantic_serializer__.to_json(big)
    )
    (folder / "260101-000000-summary.json").write_text(
        summary.model_copy(
            update={"run_id": big_id, "target": "big", "cases": cases, "items": cases}
        ).model_dump_json(),
        "utf-8",
    )
    return big_id, summary.run_id


def get(url: str) -> tuple[float, int]:
    start = time.perf_counter()
    with urllib.request.urlopen(url, timeout=120) as answer:
        body = answer.read()
    return time.perf_counter() - start, len(body)


def memory(pid: int) -> dict[str, int]:
    status = Path(f"/proc/{pid}/status").read_text()
    return {k: int(v) // 1024 for k, v in re.findall(r"(VmRSS|VmHWM):\s+(\d+) kB", status)}


def serve(folder: Path) -> tuple[subprocess.Popen[str], str]:
    viewer = Path(sys.executable).with_name("evalrunner")
    process = subprocess.Popen(
        [str(viewer), "view", str(folder), "--port", "0", "--no-browser"],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    line = process.stdout.readline()
    url = re.search(r"http://\S+", line)
    assert url, line
    base = url.group(0).rstrip("/")
    for _ in range(100):  # the socket is bound before the line is printed; uvicorn starts
        try:
            urllib.request.urlopen(base + "/static/viewer.css", timeout=5).read()
            break
        except OSError:
            time.sleep(0.05)
    return process, base


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--cases", type=int, default=10_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        big, small = make_runs(folder, args.runs, args.cases)
        size = sum(p.stat().st_size for p in folder.rglob("*-report.json"))
        print(f"{args.runs} runs + a {args.cases}-case run; report.json files {size / 1e6:.0f} MB")
        process, base = serve(folder)
        try:
            seconds, length = get(base + "/")
            print(f"runs page, first render (cold): {seconds:.3f} s, {length / 1e3:.0f} kB")
            seconds, _ = get(base + "/")
            print(f"runs page again (warm):         {seconds:.3f} s")
            seconds, length = get(f"{base}/runs/{small}")
            print(f"demo (27-case) run page, first (cold): {seconds:.3f} s, {length / 1e3:.0f} kB")
            seconds, length = get(f"{base}/runs/{big}")
            print(
                f"{args.cases}-case run page, first (cold): {seconds:.3f} s, {length / 1e3:.0f} kB"
            )
            seconds, _ = get(f"{base}/runs/{big}")
            print(f"{args.cases}-case run page again (warm): {seconds:.3f} s")
            seconds, _ = get(f"{base}/runs/{big}/cases?page=100")
            print(f"case table page 100 (warm):     {seconds:.3f} s")
            seconds, _ = get(f"{base}/runs/{big}/cases?metric=ROUGE-L&sort=BLEU-1&order=desc")
            print(f"case table failing+sorted:      {seconds:.3f} s")
            print(f"server memory (MB): {memory(process.pid)}")
        finally:
            process.terminate()
            process.wait(timeout=30)
        process, base = serve(folder)
        try:
            seconds, _ = get(f"{base}/runs/{big}")
            print(f"{args.cases}-case run page from a fresh server: {seconds:.3f} s")
            print(f"server memory (MB): {memory(process.pid)}")
        finally:
            process.terminate()
            process.wait(timeout=30)


if __name__ == "__main__":
    main()
