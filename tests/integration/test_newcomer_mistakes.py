"""A newcomer's first three mistakes — the target is not running, its answer sits under a key
evalrunner does not look for, the judge's API key is not set — each end before the suite runs
with one message that names the fix (issue 28): exit 5, nothing sent but the one probe."""

from __future__ import annotations

import json
import re
import socket
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from evalrunner.cli import EXIT_PREFLIGHT, app
from tests.support.loopback_http import Loopback

runner = CliRunner()


def closed_port() -> int:
    """A loopback port nobody listens on: every call is refused at once."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def run(tmp_path: Path, target: dict[str, Any], *extra: str) -> Any:
    suite = tmp_path / "s.csv"
    suite.write_text("question,expected_answer\nHow many days?,25 days\nAnd sick?,10\n", "utf-8")
    metrics = [] if "--metric" in extra else ["--metric", "Token F1"]
    return runner.invoke(
        app,
        [
            "run",
            "--suite",
            str(suite),
            "--target",
            json.dumps(target),
            "--out",
            str(tmp_path / "out"),
            "--quiet",
            *metrics,
            *extra,
        ],
    )


def one_message(stderr: str) -> str:
    """The error as one paragraph; it is the only thing on stderr."""
    assert stderr.startswith("error: pre-flight:"), stderr
    assert stderr.count("error:") == 1, stderr
    return " ".join(stderr.split())


def test_target_down(tmp_path: Path) -> None:
    result = run(tmp_path, {"url": f"http://127.0.0.1:{closed_port()}/ask"})
    assert result.exit_code == EXIT_PREFLIGHT == 5, result.output
    message = one_message(result.stderr)
    assert "the connection was refused: nothing is listening at that host and port" in message
    assert message.endswith(
        "Check the URL and that the service is running and reachable from where evalrunner "
        "runs. (--no-preflight skips this check)"
    )
    assert "(host=" not in message and "Connection(" not in message  # no library repr
    assert not (tmp_path / "out").exists()  # nothing ran, nothing was written


def test_wrong_response_shape(tmp_path: Path) -> None:
    with Loopback() as server:
        server.always(200, {"request_id": "r-0001-abcdef", "payload": {"reply": "25 days"}})
        result = run(tmp_path, {"url": f"{server.url}/ask"})
        assert result.exit_code == EXIT_PREFLIGHT, result.output
        message = one_message(result.stderr)
        # the fix, written in full from the keys the target really sent
        assert "Set target.answer_path" in message
        assert 'probably "answer_path": "payload.reply"' in message
        assert len(server.requests) == 1  # the probe: no case was sent
        # ... and the fix as written works; the probe's answer is not a case of the run
        fixed = run(
            tmp_path,
            {"url": f"{server.url}/ask", "answer_path": "payload.reply"},
            "--json",
            "--fail-on",
            "errors",  # measured, whatever its scores: only the fix is under test here
        )
        assert fixed.exit_code == 0, fixed.output
        assert len(server.requests) == 1 + 1 + 2  # the failed probe, the probe, two cases
    summary = json.loads(fixed.stdout)
    assert summary["items"] == 2 and summary["answered"] == 2


def test_judge_key_missing(
    tmp_path: Path, judge_stub: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    judge_stub.required_key = "sk-the-real-one"
    judge = {"openai": {"base_url": judge_stub.url, "model": "gpt-4o-mini"}}
    with Loopback() as server:
        server.always(200, {"answer": "25 days"})
        result = run(
            tmp_path,
            {"url": f"{server.url}/ask"},
            "--metric",
            "Answer Relevancy",
            "--judge",
            json.dumps(judge),
        )
        assert len(server.requests) == 1  # the target's probe; no case ran
    assert result.exit_code == EXIT_PREFLIGHT, result.output
    message = one_message(result.stderr)
    assert "the judge could not be used" in message
    assert re.search(r"Set OPENAI_API_KEY to a valid API key", message)
    assert len(judge_stub.requests) == 1  # one probe, not a retry per case
