"""A local run is bound by its target, not by the engine (issue 18): ``max_concurrency`` is
how many target calls are in flight at once, no fewer and no more, and a failing call loses
no case.

No timing: the loopback target holds each request at a barrier until ``N`` are in flight
together. If the engine ever kept fewer than ``N`` calls open, the barrier would time out
(after :data:`GATHER_SECONDS`, far beyond what gathering takes) and the test fails on the
broken barrier, not on a clock.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from evalrunner.cli import app
from evalrunner.engine import LocalEngine
from lambdas.local import local_pipeline
from tests.support.loopback_http import Loopback, Reply, Seen

from .conftest import read_csv

pytestmark = pytest.mark.slow

#: Seconds a request waits for the others of its group; only a run that never gathers
#: them comes near it.
GATHER_SECONDS = 60.0


class InFlight:
    """Counts the requests open at the server and, with ``gather``, holds each one until that
    many are open together (a cyclic barrier: one group after another)."""

    def __init__(self, gather: int = 0, *, fail_every: int = 0) -> None:
        self.lock = threading.Lock()
        self.open = 0
        self.peak = 0
        self.seen = 0
        self.broken = 0
        self.fail_every = fail_every
        self.barrier = threading.Barrier(gather, timeout=GATHER_SECONDS) if gather else None

    def __call__(self, seen: Seen) -> Reply:
        question = seen.json()["question"]
        with self.lock:
            self.open += 1
            self.seen += 1
            number = self.seen
            self.peak = max(self.peak, self.open)
        try:
            if self.barrier is not None:
                try:
                    self.barrier.wait()
                except threading.BrokenBarrierError:
                    with self.lock:
                        self.broken += 1
            if self.fail_every and number % self.fail_every == 0:
                return Reply(status=400, body={"message": f"refused {question}"})
            return Reply(body={"answer": f"The answer to {question}", "contexts": [question]})
        finally:
            with self.lock:
                self.open -= 1


def suite_csv(cases: int) -> bytes:
    lines = ["id,question,expected_answer"]
    lines += [f"c{i},Question {i}?,The answer to Question {i}?" for i in range(cases)]
    return ("\n".join(lines) + "\n").encode()


def run(server: Loopback, tmp_path: Path, cases: int, concurrency: int) -> Any:
    engine = LocalEngine(pipeline=local_pipeline)
    event = {
        "key": "test-suites/io.csv",
        "iterations": 1,
        "target": {"url": f"{server.url}/answer", "timeout_seconds": GATHER_SECONDS + 30},
        "max_concurrency": concurrency,
        "metrics": ["Exact match"],
    }
    return engine.run(event, suite=suite_csv(cases), out_dir=tmp_path)


@pytest.mark.parametrize("concurrency", [4, 25])
def test_max_concurrency_calls_are_in_flight_together(tmp_path, concurrency):
    """Two full groups of ``concurrency`` calls each gather at the barrier: the run really
    keeps that many target calls open at once, and never more."""
    target = InFlight(gather=concurrency)
    with Loopback(responder=target) as server:
        result = run(server, tmp_path, 2 * concurrency, concurrency)
    assert target.broken == 0, f"fewer than {concurrency} calls were ever in flight together"
    assert target.peak == concurrency
    assert result.summary.items == 2 * concurrency
    assert result.summary.target_errors == 0


def test_concurrency_one_never_overlaps_calls(tmp_path):
    target = InFlight()
    with Loopback(responder=target) as server:
        result = run(server, tmp_path, 8, 1)
    assert target.seen == 8
    assert target.peak == 1
    assert result.summary.items == 8


def test_failing_calls_lose_no_case(tmp_path):
    """Every third call is refused while the others are in flight beside it: each case still
    has its record, the refused ones as target errors that quote the target, the rest
    scored."""
    concurrency, cases = 6, 24
    target = InFlight(gather=concurrency, fail_every=3)
    with Loopback(responder=target) as server:
        result = run(server, tmp_path, cases, concurrency)
    assert target.broken == 0
    assert result.summary.items == cases
    assert result.summary.target_errors == cases // 3
    details = read_csv(next(p for p in result.files if p.name.endswith("details.csv")))
    assert sorted(row["case_id"] for row in details) == sorted(f"c{i}" for i in range(cases))
    failed = [row for row in details if row["status"] == "target_error"]
    assert len(failed) == cases // 3
    assert all("HTTP 400" in row["error"] for row in failed)


def test_cli_max_concurrency_is_the_calls_in_flight(tmp_path):
    """As a user runs it: ``evalrunner run --max-concurrency 5``."""
    target = InFlight(gather=5)
    suite = tmp_path / "io.csv"
    suite.write_bytes(suite_csv(10))
    with Loopback(responder=target) as server:
        spec = {"url": f"{server.url}/answer", "timeout_seconds": GATHER_SECONDS + 30}
        done = CliRunner().invoke(
            app,
            [
                "run",
                "--suite",
                str(suite),
                "--target",
                json.dumps(spec),
                "--metric",
                "Exact match",
                "--max-concurrency",
                "5",
                "--out",
                str(tmp_path / "out"),
                "--quiet",
                "--no-preflight",  # the target answers only once 5 calls are in flight
            ],
            catch_exceptions=False,
        )
    assert done.exit_code == 0, done.output
    assert target.broken == 0
    assert target.peak == 5
    assert target.seen == 10


def test_a_runs_storage_skips_botocore_and_moto_http(tmp_path, monkeypatch):
    """Issue 18: the handlers' record writes and reads reach the embedded S3 directly, not
    through botocore and moto's S3 responses (most of a case's CPU), and so do the engine's
    upload of the suite and download of the reports. Counted at moto's HTTP layer: nothing
    passes there, yet every case has its record in the report and every report file was
    downloaded whole."""
    from moto.s3.responses import S3Response

    seen: list[tuple[str, str]] = []
    for name in ("put_object", "get_object"):
        original = getattr(S3Response, name)

        def counted(self, _original=original, _name=name):
            seen.append((_name, self.parse_key_name()))
            return _original(self)

        monkeypatch.setattr(S3Response, name, counted)
    with Loopback(responder=InFlight()) as server:
        result = run(server, tmp_path, 12, 4)
    assert result.summary.items == 12
    details = read_csv(next(p for p in result.files if p.name.endswith("details.csv")))
    assert sorted(row["case_id"] for row in details) == sorted(f"c{i}" for i in range(12))
    assert seen == []  # no S3 request through moto's HTTP layer, records or reports
    assert all(path.stat().st_size > 0 for path in result.files)
    assert any(path.name.endswith("report.html") for path in result.files)
