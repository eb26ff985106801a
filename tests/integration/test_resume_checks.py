"""``--resume`` is checked before anything starts (issue 27, item 2): an id with no saved run
lists the ids that can be resumed, a run whose process still runs is not taken over, and a
run started with another suite or options is not mixed into this one. Each is exit 2 and no
target call. The saved run is what a killed run leaves in ``--out/runs/<id>/``."""

from __future__ import annotations

import json
import socket
import subprocess
from pathlib import Path

from typer.testing import CliRunner

from evalrunner.cli import app
from tests.support.loopback_http import Loopback

runner = CliRunner()
RUN_ID = "261126-101500-abc123"


def saved_run(out: Path, **marker: object) -> None:
    folder = out / "runs" / RUN_ID
    (folder / "cases").mkdir(parents=True)
    (folder / "cases" / "case-0001-i1.json").write_text('{"status": "ok"}', "utf-8")
    (folder / "resume.json").write_text(json.dumps({"run_id": RUN_ID, **marker}), "utf-8")


def resume(tmp_path: Path, url: str, run_id: str):
    suite = tmp_path / "s.csv"
    suite.write_text("question,expected_answer\nHow many days?,25 days\n", "utf-8")
    return runner.invoke(
        app,
        [
            "run",
            "--suite",
            str(suite),
            "--target",
            json.dumps({"url": url}),
            "--metric",
            "Token F1",
            "--out",
            str(tmp_path / "out"),
            "--quiet",
            "--resume",
            run_id,
        ],
    )


def flat(text: str) -> str:
    return " ".join(text.split())


def test_an_unknown_id_lists_the_runs_that_can_be_resumed(tmp_path):
    saved_run(tmp_path / "out", pid=2**22 + 1, host=socket.gethostname())
    with Loopback() as server:
        result = resume(tmp_path, f"{server.url}/ask", "261126-000000-nope00")
        assert not server.requests
    assert result.exit_code == 2, result.output
    message = flat(result.stderr)
    assert "--resume 261126-000000-nope00: no stopped run with that id" in message
    assert f"{RUN_ID} (1 finished cases)" in message


def test_no_saved_run_at_all_says_so(tmp_path):
    with Loopback() as server:
        result = resume(tmp_path, f"{server.url}/ask", RUN_ID)
        assert not server.requests
    assert result.exit_code == 2
    assert "there is no stopped run to resume there" in flat(result.stderr)


def test_a_run_still_running_is_not_taken_over(tmp_path):
    with subprocess.Popen(["sleep", "30"]) as alive:
        try:
            saved_run(tmp_path / "out", pid=alive.pid, host=socket.gethostname())
            with Loopback() as server:
                result = resume(tmp_path, f"{server.url}/ask", RUN_ID)
                assert not server.requests
        finally:
            alive.kill()
    assert result.exit_code == 2
    assert f"that run is still running (process {alive.pid})" in flat(result.stderr)


def test_a_run_of_another_suite_or_options_is_not_mixed_in(tmp_path):
    saved_run(tmp_path / "out", pid=2**22 + 1, host=socket.gethostname(), fingerprint="0" * 64)
    with Loopback() as server:
        result = resume(tmp_path, f"{server.url}/ask", RUN_ID)
        assert not server.requests
    assert result.exit_code == 2
    assert "started with another suite, target or options" in flat(result.stderr)
