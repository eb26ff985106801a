"""Runs in progress: what a local run leaves in ``<out>/runs/<run_id>/`` while it goes.

A local run writes ``resume.json`` when it starts and each case's record
(:class:`~evalrunner.run.CaseRecord`) to ``cases/<item>.json`` the moment the case finishes
(:mod:`evalrunner.engine.saved_runs`); it removes the folder once its reports are written. So
the viewer lists a run here while it goes (and a stopped run's saved cases), and the run's
own pages once it has finished.

A record holds no question (only the case's id and its position in the suite), so a live page
shows questions only where the viewer was given the suite files (``run --view``:
:class:`SuiteQuestions`), read by the suite reader the run itself uses.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path

from pydantic import BaseModel, ConfigDict, ValidationError

from evalrunner.engine.saved_runs import MARKER_NAME, RUNS_FOLDER
from evalrunner.errors import EvalRunnerError, StorageError
from evalrunner.run import CaseRecord
from evalrunner.viewer.source import Source
from evalrunner.viewer.store import RUN_ID, NotFound

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


class SuiteQuestions:
    """The questions of the suites a ``run --view`` runs, for the cases its records name.

    A record names its case by id and by position in the suite (``index``); a question is
    shown only when the suite's case at that position has that id, so a record is never shown
    with another case's question (a perturbed copy, whose id differs, shows none). The suites
    are read once, on the first live page, by :func:`evalrunner.suite.readers.read_suite_file`
    (the reader the run used on the same files: no second parser).
    """

    def __init__(self, suites: Sequence[Path]) -> None:
        self._paths = list(dict.fromkeys(suites))
        self._cases: list[dict[int, tuple[str, str]]] | None = None
        self._lock = threading.Lock()

    def _loaded(self) -> list[dict[int, tuple[str, str]]]:
        from evalrunner.suite.readers import read_suite_file

        with self._lock:
            if self._cases is None:
                self._cases = []
                for path in self._paths:
                    try:
                        suite = read_suite_file(path)
                    except (EvalRunnerError, OSError, ValueError):
                        continue  # changed since the run read it: its cases show no question
                    self._cases.append({c.index: (c.case_id, c.question) for c in suite.cases})
            return self._cases

    def question(self, record: CaseRecord) -> str | None:
        """The record's question, or None when no suite given has its case at its position."""
        for cases in self._loaded():
            found = cases.get(record.index)
            if found is not None and found[0] == record.case_id:
                return found[1]
        return None


def live_runs(source: Source) -> list[LiveRun]:
    """Every run with a ``runs/<id>/resume.json`` under the source, newest first."""
    out: list[LiveRun] = []
    for stat in source.list(MARKER_NAME, under=RUNS_FOLDER):
        parts = stat.key.split("/")
        if len(parts) != 3 or not RUN_ID.match(parts[1]):
            continue  # not a run's folder: an id evalrunner never makes is never linked
        try:
            marker = Marker.model_validate_json(source.read(stat.key))
            done = sum(1 for _ in source.list(".json", under=f"{RUNS_FOLDER}/{parts[1]}/cases"))
        except (ValidationError, OSError, StorageError):
            continue  # StorageError: a bucket key the source refuses (``runs/../resume.json``)
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
        except (ValidationError, OSError, StorageError):
            continue  # a record being replaced; the next refresh shows it
    records.sort(key=lambda r: (r.index, r.iteration))
    return run, records[-SHOWN:]
