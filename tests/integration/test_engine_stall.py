"""A local run never hangs: a dead interpreter thread or a lost job stops the run with a clear
error, the finished cases keep their reports, and ``--resume`` runs only the rest."""

from __future__ import annotations

import json
import threading

import pytest
from moto.stepfunctions.parser.asl.component.state.exec.state_map.iteration import job as job_module
from moto.stepfunctions.parser.asl.component.state.exec.state_map.iteration.itemprocessor import (
    distributed_item_processor_worker as worker_module,
)
from typer.testing import CliRunner

from evalrunner.api import EvalRun
from evalrunner.cli import app
from evalrunner.engine import LocalEngine
from evalrunner.errors import EngineStalled
from evalrunner.reports.verdict import Outcome
from lambdas.local import local_pipeline

from .conftest import read_csv

pytestmark = [
    pytest.mark.slow,
    # The simulated crash is an uncaught exception in an interpreter thread, on purpose.
    pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning"),
]

CASES = 8
SUITE = "id,question,expected_answer\n" + "".join(
    f"c{i},Question {i}?,Answer {i}.\n" for i in range(CASES)
)


class CountingTarget:
    def __init__(self) -> None:
        self.questions: list[str] = []
        self._lock = threading.Lock()

    def __call__(self, event, context):
        with self._lock:
            self.questions.append(event["question"])
        number = event["question"].split()[1].rstrip("?")
        return {"answer": f"Answer {number}.", "contexts": ["ctx"]}


def event() -> dict:
    return {
        "key": "test-suites/stall.csv",
        "iterations": 1,
        "target": {"lambdaArn": "counting"},
        "metrics": ["Exact match"],
        "max_concurrency": 1,  # one worker: items run in order, so the crash point is exact
    }


def kill_worker_at(monkeypatch, index: int) -> None:
    """The interpreter's worker thread dies (as it did with RecursionError) at item ``index``."""
    original = worker_module.DistributedItemProcessorWorker._eval_job

    def _eval_job(self, env, job):
        if job.job_index == index:
            raise RuntimeError("simulated interpreter crash")
        return original(self, env, job)

    monkeypatch.setattr(worker_module.DistributedItemProcessorWorker, "_eval_job", _eval_job)


def test_a_dead_interpreter_thread_fails_the_run_with_reports_and_a_resume(monkeypatch, tmp_path):
    target = CountingTarget()
    kill_worker_at(monkeypatch, 3)
    engine = LocalEngine(
        pipeline=local_pipeline, extra_functions={"counting": target}, stall_timeout=60
    )
    with pytest.raises(EngineStalled) as caught:
        engine.run(event(), suite=SUITE.encode(), out_dir=tmp_path)
    error = caught.value
    message = str(error)
    assert (
        "interpreter thread" in message and "RuntimeError: simulated interpreter crash" in message
    )
    assert f"--resume {error.run_id}" in message
    assert "3 of 8 case runs had finished" in message

    # The cases that finished are reported; the others are rows marked as failed tasks.
    details = next(p for p in error.files if p.name.endswith("details.csv"))
    rows = read_csv(details)
    assert len(rows) == CASES
    assert [r["status"] for r in rows] == ["ok"] * 3 + ["task_failed"] * 5
    summary = json.loads(
        next(p for p in error.files if p.name.endswith("summary.json")).read_text()
    )
    assert summary["partial"] is True and "interpreter thread" in summary["stopped_reason"]
    # the error carries the partial run, as the API hands a run over: its verdict is PARTIAL
    assert error.result is not None and error.result.summary.run_id == error.run_id
    partial_run = EvalRun(error.result)
    assert partial_run.verdict.outcome is Outcome.PARTIAL and not partial_run.passed
    assert partial_run.markdown().startswith("## evalrunner: ❌ PARTIAL")
    saved = tmp_path / "runs" / error.run_id / "cases"
    assert len(list(saved.glob("*.json"))) == 3
    assert len(target.questions) == 3

    # Resume: the crash is gone; only the five unfinished cases reach the target.
    monkeypatch.undo()
    result = engine.run(event(), suite=SUITE.encode(), out_dir=tmp_path, resume=error.run_id)
    assert result.summary.run_id == error.run_id
    assert result.summary.target_errors == 0 and result.summary.task_failures == 0
    assert result.summary.partial is False
    assert sorted(target.questions) == sorted(f"Question {i}?" for i in range(CASES))
    rows = read_csv(next(p for p in result.files if p.name.endswith("details.csv")))
    assert [r["status"] for r in rows] == ["ok"] * CASES
    assert not (tmp_path / "runs" / error.run_id).exists()


def test_a_lost_job_fails_the_run_after_the_stall_timeout(monkeypatch, tmp_path):
    """No thread dies, but one job is never closed, so the Map would wait forever."""
    original = job_module.JobPool.close_job

    def close_job(self, job):
        if job.job_index == 5:
            return  # lost
        return original(self, job)

    monkeypatch.setattr(job_module.JobPool, "close_job", close_job)
    engine = LocalEngine(
        pipeline=local_pipeline, extra_functions={"counting": CountingTarget()}, stall_timeout=1.0
    )
    with pytest.raises(EngineStalled, match=r"nothing ran for \d+ s .*stall timeout 1 s"):
        engine.run(event(), suite=SUITE.encode(), out_dir=tmp_path)


def test_the_cli_exits_3_and_says_how_to_resume(monkeypatch, tmp_path):
    kill_worker_at(monkeypatch, 2)
    suite = tmp_path / "stall.csv"
    suite.write_text(SUITE, encoding="utf-8")
    from evalrunner.engine import local

    monkeypatch.setattr(local, "local_target_functions", lambda: {"counting": CountingTarget()})
    result = CliRunner().invoke(
        app,
        [
            "run",
            "--suite",
            str(suite),
            "--target",
            '{"lambdaArn": "counting"}',
            "--metric",
            "Exact match",
            "--max-concurrency",
            "1",
            "--out",
            str(tmp_path / "out"),
            "--quiet",
        ],
    )
    assert result.exit_code == 3, result.output
    assert "stopped making progress" in result.output
    assert "--resume" in result.output
