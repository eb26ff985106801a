"""The pre-flight's probe is in flight while the engine starts (issue 31 goal 3: the probe's
wait on the target no longer adds to the engine's start-up), and the run still waits for its
answer: a probe that fails after the engine has started stops the run exactly as one that
failed first did (exit 5, the one probe sent, nothing written). Order is asserted, never time:
the target holds the probe's reply until the engine has begun starting (its pipeline looked
up); run one after the other, the engine would not start until that reply came."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from evalrunner import launch
from evalrunner.cli import EXIT_PREFLIGHT, app
from evalrunner.preflight import InBackground, PreflightFailed
from tests.support.loopback_http import Loopback, Reply, Seen

runner = CliRunner()
#: How long the target holds the probe for the engine to start: far longer than it takes.
HOLD = 30.0


def engine_starting(monkeypatch: pytest.MonkeyPatch) -> threading.Event:
    """Set when the engine starts (run_local looks its pipeline up, after the probe began)."""
    started = threading.Event()
    original = launch.local_pipeline

    def marked() -> Any:
        started.set()
        return original()

    monkeypatch.setattr(launch, "local_pipeline", marked)
    return started


def holding_the_probe(started: threading.Event, probe: Reply, seen: list[bool]) -> Loopback:
    """A target whose first request (the probe) waits until the engine is starting."""
    first = threading.Lock()

    def respond(request: Seen) -> Reply:
        if first.acquire(blocking=False):
            seen.append(started.wait(HOLD))
            return probe
        return Reply(200, {"answer": "25 days"})

    return Loopback(respond)


def run(tmp_path: Path, url: str, *extra: str) -> Any:
    suite = tmp_path / "s.csv"
    suite.write_text("question,expected_answer\nHow many days?,25 days\nAnd sick?,10\n", "utf-8")
    return runner.invoke(
        app,
        [
            "run",
            "--suite",
            str(suite),
            "--target",
            json.dumps({"url": url}),
            "--out",
            str(tmp_path / "out"),
            "--metric",
            "Token F1",
            "--fail-on",
            "errors",
            *extra,
        ],
    )


def test_the_probe_is_in_flight_while_the_engine_starts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    started, seen = engine_starting(monkeypatch), []
    with holding_the_probe(started, Reply(200, {"answer": "25 days"}), seen) as server:
        result = run(tmp_path, f"{server.url}/ask", "--quiet", "--json")
        assert result.exit_code == 0, result.output
        assert seen == [True]  # the engine started while the probe's reply was held
        assert len(server.requests) == 1 + 2  # the probe, then the two cases
    assert json.loads(result.stdout)["answered"] == 2


def test_a_probe_failing_after_the_engine_started_stops_the_run_before_any_case(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Not quiet: the progress bar is drawn from the run's first progress, so a failed probe
    leaves the error alone on stderr, as when the probe ran before the engine."""
    started, seen = engine_starting(monkeypatch), []
    wrong_shape = Reply(200, {"payload": {"reply": "25 days"}})
    with holding_the_probe(started, wrong_shape, seen) as server:
        result = run(tmp_path, f"{server.url}/ask")
        assert result.exit_code == EXIT_PREFLIGHT, result.output
        assert seen == [True]
        assert len(server.requests) == 1  # the probe: no case was sent
    assert result.stderr.startswith("error: pre-flight:"), result.stderr
    assert result.stderr.count("error:") == 1, result.stderr
    assert 'probably "answer_path": "payload.reply"' in " ".join(result.stderr.split())
    assert not (tmp_path / "out").exists()  # nothing ran, nothing was written


def test_the_background_calls_run_in_order_and_stop_at_the_first_failure() -> None:
    made: list[str] = []

    def fail() -> None:
        made.append("judge")
        raise PreflightFailed("judge", "Set OPENAI_API_KEY")

    probe = InBackground([lambda: made.append("target"), fail, lambda: made.append("never")])
    for _ in range(2):  # and again: a second run of the same command must not start either
        with pytest.raises(PreflightFailed, match="Set OPENAI_API_KEY"):
            probe.wait()
    assert made == ["target", "judge"]
    InBackground([]).wait()  # nothing to probe (logged answers): returns
