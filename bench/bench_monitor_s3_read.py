"""Issue 34: reading a large S3 prefix of small log files, serial against concurrent.

Puts N small JSONL log files (one record each) under a prefix of a moto server started in its
own process (HTTP on loopback, as boto3 talks to S3), then times ``read_location`` over the
prefix with one reader (the old serial read) and with the monitor's read-ahead
(``MAX_READERS`` at once). A second pass adds S3's own per-request latency to each GetObject
(a sleep in botocore's ``before-send`` hook: loopback moto answers in a few milliseconds, S3
in tens), which is what the read-ahead hides. Prints wall seconds and requests per second.
Usage: python bench/bench_monitor_s3_read.py [N] [--latency-ms 25] [--latency-n 300]
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import boto3

from evalrunner.monitor import locations
from evalrunner.monitor.reading import read_location


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_server(port: int) -> subprocess.Popen[bytes]:
    server = Path(sys.executable).with_name("moto_server")
    process = subprocess.Popen(
        [str(server), "-p", str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    for _ in range(100):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.1).close()
            return process
        except OSError:
            time.sleep(0.1)
    process.kill()
    raise SystemExit("moto_server did not start")


def fill(s3: Any, bucket: str, prefix: str, n: int) -> None:
    s3.create_bucket(Bucket=bucket)

    def put(i: int) -> None:
        record = {
            "id": f"r{i:05}",
            "question": f"How many days of leave after {i % 40} years?",
            "answer": f"{25 + i % 5} days.",
            "timestamp": "2026-01-31T12:00:00Z",
        }
        s3.put_object(Bucket=bucket, Key=f"{prefix}{i:05}.jsonl", Body=json.dumps(record).encode())

    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(put, range(n)))


def timed_read(s3: Any, location: str, readers: int, n: int) -> float:
    locations.MAX_READERS = readers
    start = time.perf_counter()
    read = read_location(location, "jsonl", s3=s3)
    wall = time.perf_counter() - start
    assert len(read.interactions) == n and not read.problems, (len(read.interactions), n)
    assert [i.id for i in read.interactions] == [f"r{i:05}" for i in range(n)]  # in order
    return wall


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("n", nargs="?", type=int, default=2000)
    parser.add_argument("--latency-ms", type=float, default=25.0)
    parser.add_argument("--latency-n", type=int, default=300)
    args = parser.parse_args()
    os.environ.setdefault("AWS_ACCESS_KEY_ID", "bench")
    os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "bench")
    port = free_port()
    process = start_server(port)
    concurrent = locations.MAX_READERS
    try:
        s3 = boto3.client("s3", region_name="us-east-1", endpoint_url=f"http://127.0.0.1:{port}")
        fill(s3, "bench-logs", "plain/", args.n)
        fill(s3, "bench-slow", "slow/", args.latency_n)
        fill(s3, "bench-warm", "warm/", 16)
        timed_read(s3, "s3://bench-warm/warm/", concurrent, 16)  # open the connections
        print(f"{args.n} objects, loopback moto_server (no added latency):")
        for label, readers in (("serial (1 reader)", 1), (f"{concurrent} readers", concurrent)):
            wall = timed_read(s3, "s3://bench-logs/plain/", readers, args.n)
            print(f"  {label:18} {wall:6.2f} s  {args.n / wall:7.0f} objects/s")

        def latency(**_: Any) -> None:
            time.sleep(args.latency_ms / 1000)

        s3.meta.events.register("before-send.s3.GetObject", latency)
        print(f"{args.latency_n} objects, {args.latency_ms:g} ms added to each GetObject:")
        for label, readers in (("serial (1 reader)", 1), (f"{concurrent} readers", concurrent)):
            wall = timed_read(s3, "s3://bench-slow/slow/", readers, args.latency_n)
            print(f"  {label:18} {wall:6.2f} s  {args.latency_n / wall:7.0f} objects/s")
    finally:
        locations.MAX_READERS = concurrent
        process.terminate()
        process.wait(timeout=10)


if __name__ == "__main__":
    main()
