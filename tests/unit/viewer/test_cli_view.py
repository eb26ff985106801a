"""``evalrunner view``'s bad input: a folder that is not there and a port in use each stop it
with a message that says what to give instead (exit code 2), before anything is served."""

from __future__ import annotations

import json
import socket
import urllib.request
from pathlib import Path

import pytest
from typer.testing import CliRunner

from evalrunner.cli import app
from evalrunner.cli.viewing import open_viewer
from evalrunner.run import CaseRecord

runner = CliRunner()


def test_a_missing_folder_is_named(tmp_path: Path) -> None:
    result = runner.invoke(app, ["view", str(tmp_path / "nope"), "--no-browser"])
    assert result.exit_code == 2
    assert "no such folder" in result.output and "--out folder" in result.output


def test_a_busy_port_is_named(tmp_path: Path) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        port = busy.getsockname()[1]
        result = runner.invoke(app, ["view", str(tmp_path), "--port", str(port), "--no-browser"])
    assert result.exit_code == 2
    assert f"127.0.0.1:{port}" in result.output and "--port 0" in result.output


def test_run_view_hands_the_viewer_the_suites_it_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What ``run --view`` opens (:func:`open_viewer` with the run's suite files) shows a
    finished case's question on the run's live page, served over HTTP from its thread."""
    monkeypatch.setenv("BROWSER", "true")  # webbrowser runs `true <url>`: nothing opens
    suite = tmp_path / "suite.csv"
    suite.write_text("question,expected_answer\nHow many leave days?,25\n", "utf-8")
    out = tmp_path / "out"
    cases = out / "runs" / "260101-000000-abcdef" / "cases"
    cases.mkdir(parents=True)
    (cases.parent / "resume.json").write_text(json.dumps({"run_id": "260101-000000-abcdef"}))
    finished = CaseRecord(item_id="item-0", case_id="case-0001", index=0, iteration=1, status="ok")
    (cases / "item-0.json").write_text(finished.model_dump_json())
    viewer = open_viewer(out, [suite])
    try:
        with urllib.request.urlopen(f"{viewer.url}live/260101-000000-abcdef") as page:
            assert "How many leave days?" in page.read().decode()
    finally:
        viewer.stop()
