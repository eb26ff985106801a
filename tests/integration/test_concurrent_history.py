"""Nothing fails silently (issue 27, item 8): runs of one target that start together (a CI
matrix, a script) into one ``--out`` folder are every one of them in the target's history.
Each run used to copy the history page its own engine built, which knew only the sets
complete when it started: the last copy won, and of eight runs one was listed."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.loopback_http import Loopback

pytestmark = pytest.mark.slow

RUNS = 8
EVALRUNNER = str(Path(sys.executable).parent / "evalrunner")


def test_eight_runs_started_together_are_eight_history_entries(tmp_path):
    suite = tmp_path / "s.csv"
    suite.write_text("question,expected_answer\nHow many days?,25 days\n", "utf-8")
    out = tmp_path / "out"
    with Loopback() as server:
        server.always(200, {"answer": "25 days"})
        spec = json.dumps({"url": f"{server.url}/ask", "name": "together"})
        command = [EVALRUNNER, "run", "--suite", str(suite), "--target", spec, "--metric"]
        command += ["Token F1", "--out", str(out), "--quiet"]
        children = [
            subprocess.Popen(
                command,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for _ in range(RUNS)
        ]
        results = [(child.wait(timeout=300), child.communicate()) for child in children]
    assert [code for code, _ in results] == [0] * RUNS, results
    folder = out / "test-reports" / "together"
    manifests = sorted(folder.glob("*manifest.json"))
    assert len(manifests) == RUNS
    history = json.loads((folder / "history.json").read_text("utf-8"))
    run_ids = {json.loads(m.read_text("utf-8"))["run_id"] for m in manifests}
    assert {r["run_id"] for r in history["runs"]} == run_ids
    assert len(history["runs"]) == RUNS
    page = (folder / "history.html").read_text("utf-8")
    assert all(run_id in page for run_id in run_ids)
