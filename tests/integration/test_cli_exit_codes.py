"""Exit codes a CI job can rely on: a run that measured nothing has its own code (4), and an
``--out`` that cannot hold the reports is refused (2) before any target is called."""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path

import pytest
from typer.testing import CliRunner

from evalrunner.cli import EXIT_NO_ANSWER, app
from tests.support.loopback_http import Loopback

runner = CliRunner()


def answering_server() -> Loopback:
    """A loopback target that answers every question (``requests`` counts the calls)."""
    server = Loopback()
    server.always(200, {"answer": "25 days"})
    return server


def closed_port() -> int:
    """A loopback port nobody listens on: every call is refused at once."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def suite(tmp_path: Path) -> Path:
    path = tmp_path / "s.csv"
    path.write_text("question,expected_answer\nHow many days?,25 days\nAnd sick?,10\n", "utf-8")
    return path


def run(tmp_path: Path, target: dict, out: Path, *extra: str):
    return runner.invoke(
        app,
        [
            "run",
            "--suite",
            str(suite(tmp_path)),
            "--target",
            json.dumps(target),
            "--metric",
            "Token F1",
            "--out",
            str(out),
            "--quiet",
            *extra,
        ],
    )


def test_a_run_where_every_target_call_failed_exits_4(tmp_path):
    # a target that dies once the run is under way (the pre-flight would stop a dead one: 5)
    target = {"url": f"http://127.0.0.1:{closed_port()}/ask", "max_retries": 0}
    result = run(tmp_path, target, tmp_path / "out", "--no-preflight")
    assert result.exit_code == EXIT_NO_ANSWER == 4, result.output
    assert "no target call succeeded" in result.stdout
    # the reports are still written, every case with its error
    assert list((tmp_path / "out").rglob("*details.csv"))


def test_no_answer_wins_over_a_failed_gate(tmp_path):
    target = {"url": f"http://127.0.0.1:{closed_port()}/ask", "max_retries": 0}
    result = run(
        tmp_path,
        target,
        tmp_path / "out",
        "--fail-under",
        "Token F1=0.5",
        "--json",
        "--no-preflight",
    )
    assert result.exit_code == 4, result.output
    summary = json.loads(result.stdout)
    assert summary["answered"] == 0 and summary["target_errors"] == 2


def test_a_run_with_answers_exits_by_its_verdict(tmp_path):
    # "And sick?" gets "25 days": one case below Token F1's threshold fails the run by
    # default (exit 1, not 4: it was measured); --fail-on regressions lets it pass
    with answering_server() as server:
        result = run(tmp_path, {"url": f"{server.url}/ask"}, tmp_path / "o")
        assert result.exit_code == 1, result.output
        assert "verdict: FAILED" in result.stdout
        assert "Token F1: 1 of 2 scored cases below the threshold" in result.stdout
        tolerant = run(
            tmp_path, {"url": f"{server.url}/ask"}, tmp_path / "o2", "--fail-on", "regressions"
        )
        assert tolerant.exit_code == 0, tolerant.output
        assert "verdict: PASSED" in tolerant.stdout
    assert len(server.requests) == 2 * (1 + 2)  # each run: the pre-flight probe, two cases


@pytest.mark.parametrize("inside", [False, True])
def test_out_on_a_file_is_refused_before_any_target_is_called(tmp_path, inside):
    blocker = tmp_path / "taken"
    blocker.write_text("not a folder", "utf-8")
    out = blocker / "reports" if inside else blocker
    with answering_server() as server:
        result = run(tmp_path, {"url": f"{server.url}/ask"}, out)
    assert result.exit_code == 2, result.output
    assert "--out:" in result.stderr and "give a folder" in result.stderr
    assert "Traceback" not in result.output
    assert len(server.requests) == 0
    assert blocker.read_text("utf-8") == "not a folder"


def test_start_refuses_out_on_a_file_too(tmp_path):
    blocker = tmp_path / "taken"
    blocker.write_text("x", "utf-8")
    suite(tmp_path)
    event = tmp_path / "ev.json"
    event.write_text(
        json.dumps(
            {
                "key": "test-suites/s.csv",
                "iterations": 1,
                "target": {"lambdaArn": "evalrunner-demo-hr"},
            }
        ),
        "utf-8",
    )
    for extra in ([], ["--aws", "--bucket", "b", "--state-machine-arn", "arn"]):
        result = runner.invoke(app, ["start", "--event", str(event), "--out", str(blocker), *extra])
        assert result.exit_code == 2 and "is a file" in result.stderr, result.output


def test_an_unwritable_out_is_refused(tmp_path):
    """A folder mode 0o500 stops an ordinary user; root writes anywhere except where the
    kernel itself refuses, such as /proc/sys (no folder can be made there, by anyone)."""
    if os.geteuid() == 0:
        locked = Path("/proc/sys")
        assert not os.access(locked, os.W_OK), "root can write /proc/sys on this kernel"
        result = run(tmp_path, {"url": "http://127.0.0.1:9/ask"}, locked / "evalrunner-out")
    else:
        locked = tmp_path / "locked"
        locked.mkdir()
        locked.chmod(0o500)
        try:
            result = run(tmp_path, {"url": "http://127.0.0.1:9/ask"}, locked / "out")
        finally:
            locked.chmod(0o700)
    assert result.exit_code == 2 and "not writable" in result.stderr
