"""A folder of runs for the viewer's tests, made once per session (two demo runs take ~10 s)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.viewer_runs import big_run, demo_runs, hostile_run, rich_run


@pytest.fixture(scope="session")
def runs_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("viewer-runs")
    good, _degraded = demo_runs(out)
    hostile_run(out, good)
    big_run(out, good, 1200)
    rich_run(out, good)
    return out
