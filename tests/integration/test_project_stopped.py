"""A project matrix stopped with Ctrl-C: the stopped cell's reports are written, the cells not
reached are listed, and the message's ``--resume`` command, which names the cell, runs the
rest of that cell (before, it said "repeat the same command with --resume ID", and that
command was refused in a project)."""

from __future__ import annotations

import json
import signal
import subprocess
import textwrap
import time
from pathlib import Path

import pytest

from tests.integration.test_stopped_run import (
    CASES,
    EVALRUNNER,
    HOLD_AT,
    assert_each_case_answered_once,
    target,  # noqa: F401  (the fixture)
)
from tests.support.holding_target import HoldingTarget

pytestmark = pytest.mark.slow


def write_project(folder: Path, holding: HoldingTarget) -> None:
    rows = "".join(f"c{i},Question {i}?,Answer {i}.\n" for i in range(CASES))
    (folder / "stop.csv").write_text("id,question,expected_answer\n" + rows, encoding="utf-8")
    (folder / "other.csv").write_text(
        "id,question,expected_answer\nx,Question 0?,Answer 0.\n", "utf-8"
    )
    (folder / "evalrunner.toml").write_text(
        textwrap.dedent(
            f"""\
            metrics = ["Exact match"]
            max_concurrency = 1

            [targets.stoppable]
            url = "{holding.server.url}/ask"
            max_retries = 0

            [suites]
            stop = "stop.csv"
            other = "other.csv"
            """
        ),
        "utf-8",
    )


def test_ctrl_c_stops_the_matrix_and_its_resume_command_runs_the_rest_of_the_cell(
    tmp_path,
    target,  # noqa: F811
):
    write_project(tmp_path, target)
    out = tmp_path / "evalrunner-out" / "stoppable" / "stop"
    child = subprocess.Popen(
        [EVALRUNNER, "run", "--quiet", "--no-preflight"],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 120
    while len(target.received) <= HOLD_AT or len(list(out.glob("runs/*/cases/*.json"))) < HOLD_AT:
        assert child.poll() is None, child.communicate()
        assert time.monotonic() < deadline, "the run never reached the held call"
        time.sleep(0.05)
    child.send_signal(signal.SIGINT)
    stdout, stderr = child.communicate(timeout=120)
    assert child.returncode == 3, stdout + stderr
    assert "Traceback" not in stderr
    assert "not run: stoppable × other" in stdout
    run_id = next(out.glob("runs/*")).name
    command = f"evalrunner run --target stoppable --suite stop --resume {run_id}"
    assert command in " ".join(stderr.split()), stderr
    matrix = json.loads((tmp_path / "evalrunner-out" / "matrix.json").read_text("utf-8"))
    assert matrix["not_run"] == ["stoppable × other"]
    target.release()

    args = command.split()[1:]
    done = subprocess.run(
        [EVALRUNNER, *args, "--quiet"], cwd=tmp_path, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert_each_case_answered_once(target)
    (cell,) = json.loads((tmp_path / "evalrunner-out" / "matrix.json").read_text())["cells"]
    assert (cell["target"], cell["suite"], cell["run_id"]) == ("stoppable", "stop", run_id)
    assert cell["headline"] == "PASSED"


def test_resume_in_a_project_needs_one_cell(tmp_path, target):  # noqa: F811
    write_project(tmp_path, target)
    done = subprocess.run(
        [EVALRUNNER, "run", "--resume", "261127-000000-abcdef"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2, done.stdout + done.stderr
    message = " ".join(done.stderr.split())
    assert "--resume continues one cell's run: pick it with --target NAME --suite NAME" in message
    assert target.received == []
