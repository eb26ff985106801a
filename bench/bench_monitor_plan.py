"""Issue 34: what deciding a day of traffic costs a monitor run before anything is scored.

Writes N Bedrock model-invocation records (24 gzip files, one per hour, as Bedrock delivers
them), then times the monitor's plan (list, unpack, parse, check against the watermark,
sample), the suite rows of the sample (PII-masked), the watermark written after it, and a
second plan over the same logs (everything a duplicate). Prints wall and CPU seconds and the
watermark's size.
Usage: python bench/bench_monitor_plan.py [N] [--sample 5%]
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from evalrunner.monitor.runner import MonitorOptions, commit, plan, suite_rows
from evalrunner.monitor.sampling import parse_sample
from evalrunner.monitor.watermark import LocalWatermarks

T0 = datetime(2026, 1, 31, tzinfo=UTC)


def record(i: int) -> dict[str, object]:
    question = f"How many days of leave do I get after {i % 40} years? Mail me at e{i}@corp.io"
    answer = f"After {i % 40} years you get {25 + i % 5} days of annual leave, plus holidays."
    return {
        "schemaType": "ModelInvocationLog",
        "schemaVersion": "1.0",
        "timestamp": (T0 + timedelta(seconds=i * 86400 / 100_000)).isoformat(),
        "requestId": f"req-{i:08d}",
        "operation": "Converse",
        "modelId": "anthropic.claude-3-haiku-20240307-v1:0",
        "input": {
            "inputBodyJson": {"messages": [{"role": "user", "content": [{"text": question}]}]}
        },
        "output": {"outputBodyJson": {"output": {"message": {"content": [{"text": answer}]}}}},
    }


def timed(label: str, fn):  # type: ignore[no-untyped-def]
    wall, cpu = time.perf_counter(), time.process_time()
    value = fn()
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    print(f"{label:<44} wall {wall:6.2f} s   cpu {cpu:6.2f} s")
    return value


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("n", nargs="?", type=int, default=100_000)
    parser.add_argument("--sample", default="5%")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        logs = Path(folder) / "logs"
        logs.mkdir()
        per_hour = -(-args.n // 24)
        for hour in range(24):
            lines = [
                json.dumps(record(i))
                for i in range(hour * per_hour, min(args.n, (hour + 1) * per_hour))
            ]
            (logs / f"{hour:02d}.json.gz").write_bytes(gzip.compress("\n".join(lines).encode()))
        size = sum(p.stat().st_size for p in logs.iterdir())
        print(f"{args.n:,} records in 24 gzip files, {size / 1e6:.1f} MB; sample {args.sample}")
        store = LocalWatermarks(Path(folder) / "out")
        options = MonitorOptions(source=str(logs), sample=parse_sample(args.sample), seed=1)
        first = timed("plan (read, parse, select, sample)", lambda: plan(options, store))
        print(f"  {first.found:,} read, {len(first.new):,} new, {len(first.chosen):,} sampled")
        rows = timed(
            "suite rows of the sample (PII-masked)", lambda: suite_rows(first.chosen, mask_pii=True)
        )
        body = json.dumps(rows).encode()
        print(f"  suite {len(body) / 1e6:.2f} MB for {len(rows):,} cases")
        timed("watermark written", lambda: commit(first, store, "run-1", datetime.now(UTC)))
        print(f"  watermark {store.path(first.name).stat().st_size / 1e6:.2f} MB")
        second = timed("second plan over the same logs", lambda: plan(options, store))
        print(f"  {len(second.new):,} new, {second.duplicates:,} duplicates, ", end="")
        print(f"{second.too_late:,} too late")
    sys.exit(0)
