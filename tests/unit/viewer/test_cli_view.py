"""``evalrunner view``'s bad input: a folder that is not there and a port in use each stop it
with a message that says what to give instead (exit code 2), before anything is served."""

from __future__ import annotations

import socket
from pathlib import Path

from typer.testing import CliRunner

from evalrunner.cli import app

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
