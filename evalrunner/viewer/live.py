"""Runs in progress: what a local run leaves in ``<out>/runs/<run_id>/`` while it goes.

A local run writes ``resume.json`` when it starts and each case's record
(:class:`~evalrunner.run.CaseRecord`) to ``cases/<item>.json`` the moment the case finishes
(:mod:`evalrunner.engine.saved_runs`); it removes the folder once its reports are written. So
the viewer lists a run here while it goes (and a stopped run's saved cases), and the run's
own pages once it has finished.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, ValidationError

from evalrunner.engine.saved_runs import MARKER_NAME, RUNS_FOLDER
from evalrunner.run import CaseRecord
from evalrunner.viewer.source import Source
from evalrunner.viewer.store import NotFound

#: Records shown on a live page (the newest; a run's own pages show them all when it ends).
SHOWN = 500


class Marker(BaseModel):
    """The part of ``resume.json`` the viewer shows."""

    model_config = ConfigDict(extra="ignore")

    run_id: str
    suite: str | None = None
    started: str = ""


class LiveRun(BaseModel):
    run_id: str
    suite: str | None
    started: str
    finished_cases: int


def live_runs(source: Source) -> list[LiveRun]:
    """Every run with a ``runs/<id>/resume.json`` under the source, newest first."""
    out: list[LiveRun] = []
    for stat in source.list(MARKER_NAME, under=RUNS_FOLDER):
        parts = stat.key.split("/")
        if len(parts) != 3:
            continue
        try:
            marker = Marker.model_validate_json(source.read(stat.key))
        except (ValidationError, OSError):
            continue
        done = sum(1 for _ in source.list(".json", under=f"{RUNS_FOLDER}/{parts[1]}/cases"))
        out.append(
            LiveRun(
                run_id=parts[1],
                suite=marker.suite,
                started=marker.started,
                finished_cases=done,
            )
        )
    return sorted(out, key=lambda r: r.started, reverse=True)


def live_records(source: Source, run_id: str) -> tuple[LiveRun, list[CaseRecord]]:
    """The run (looked up among those listed, never used as a path first) and its finished
    cases' records, in suite order."""
    run = next((r for r in live_runs(source) if r.run_id == run_id), None)
    if run is None:
        raise NotFound(f"no run in progress with id {run_id[:80]!r}")
    records: list[CaseRecord] = []
    for stat in source.list(".json", under=f"{RUNS_FOLDER}/{run.run_id}/cases"):
        try:
            records.append(CaseRecord.model_validate_json(source.read(stat.key)))
        except (ValidationError, OSError):
            continue  # a record being replaced; the next refresh shows it
    records.sort(key=lambda r: (r.index, r.iteration))
    return run, records[-SHOWN:]
