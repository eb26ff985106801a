"""The seam between a run's steps, as a deployed run crosses it: Prepare writes the run's
configuration, and a step in *another process* (a RunCase function) rebuilds what it needs
from that JSON alone. Tests of anything that must cross it (plugin metrics, named judge
metrics) use these two halves, so the crossing is written once."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from evalrunner.event import read_event
from evalrunner.pipeline import prepare
from tests.support.catalog import restored_catalog
from tests.support.suite_bucket import suite_store

REPO = Path(__file__).resolve().parents[2]
NOW = datetime(2026, 11, 27, tzinfo=UTC)


def prepared_config(event: dict[str, Any]) -> dict[str, Any]:
    """The run configuration Prepare writes for ``event`` (over a one-case suite), the
    process's metric catalog left as it was."""
    with restored_catalog(), suite_store(b"question,expected_answer\nQ?,A\n", bucket="seam") as s:
        raw = {"key": "test-suites/s.csv", "iterations": 1, "run_id": "seam-run", **event}
        prepare.prepare_run(read_event(raw), s, now=NOW)
        config: dict[str, Any] = s.get_json(s.run_key("seam-run"))
    return config


def in_fresh_process(script: str, config: dict[str, Any]) -> Any:
    """Run ``script`` in a new interpreter with ``config`` as its one argument (JSON) and
    return what it printed, read as JSON: nothing this process imported or registered
    reaches it."""
    done = subprocess.run(
        [sys.executable, "-c", script, json.dumps(config)],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)
