"""What a local run leaves in its ``--out`` folder for a resume, and what a stopped run left.

A local run keeps its case records in an embedded S3 that lives in its process; a record is
also written to ``<out>/runs/<run_id>/cases/<item>.json`` the moment its case finishes (by
write-and-rename: a killed process leaves whole files or none), next to ``resume.json``,
which says which run it is, which process runs it, and a fingerprint of the suite and the
event. A run that ends with its reports removes the folder; a run that was killed
(``kill -9``), stopped (SIGTERM, Ctrl-C) or stalled leaves it, and
``evalrunner run ... --resume <run_id>`` puts those records back so that only the other cases
reach the target.

Why a fingerprint: the records are answers to *that* suite's cases, scored with *that*
event's metrics; resuming with another suite or target would mix two runs into one report.

A claim file (``<prefix>claim.json``, see :mod:`evalrunner.reports.writers.publish`) whose set has
no manifest and whose process is gone is the trace of a run that was killed before it wrote its
reports: :func:`stopped_run_notices` names it (and removes it when nothing else of its set
was written), so it does not sit there looking like a run in progress.
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalrunner.errors import EventError
from evalrunner.reports.writers.publish import CLAIM_NAME, MANIFEST_NAME

RUNS_FOLDER = "runs"
MARKER_NAME = "resume.json"


def saved_run_dir(out_dir: Path, run_id: str) -> Path:
    """Where a run keeps its finished case records for ``--resume``."""
    return out_dir / RUNS_FOLDER / run_id


def fingerprint(event: dict[str, Any], suite: bytes) -> str:
    """What a resumed run must share with the stopped one: the suite's bytes and the event
    (less its run id), hashed (the event may hold credentials: only the hash is written)."""
    digest = hashlib.sha256(suite)
    rest = {k: v for k, v in event.items() if k != "run_id"}
    digest.update(json.dumps(rest, sort_keys=True, default=str).encode("utf-8"))
    return digest.hexdigest()


#: Runs this process is running now (a run stopped in this process, by a stall or a caught
#: signal, has ended and may be resumed here: the Python API).
_active: set[str] = set()
_active_lock = threading.Lock()


def mark_active(run_id: str, active: bool) -> None:
    with _active_lock:
        (_active.add if active else _active.discard)(run_id)


def process_alive(pid: int, host: str | None, run_id: str | None = None) -> bool:
    """Whether process ``pid`` of ``host`` may still be running ``run_id`` (another host's:
    assumed)."""
    if host and host != socket.gethostname():
        return True
    if pid == os.getpid():
        with _active_lock:
            return run_id in _active
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process: alive
        return True
    return True


def this_process() -> dict[str, Any]:
    """The fields that let a later run tell whether the writer is still running."""
    return {"pid": os.getpid(), "host": socket.gethostname()}


@dataclass(frozen=True)
class SavedRun:
    """A run's saved records in an ``--out`` folder."""

    run_id: str
    folder: Path
    cases: int
    marker: dict[str, Any]

    @property
    def running(self) -> bool:
        pid = self.marker.get("pid")
        if not isinstance(pid, int):
            return False
        return process_alive(pid, self.marker.get("host"), self.run_id)


def saved_runs(out_dir: Path) -> list[SavedRun]:
    """Every run with saved records (or a marker) under ``out_dir/runs/``, by id."""
    root = out_dir / RUNS_FOLDER
    if not root.is_dir():
        return []
    found = []
    for folder in sorted(p for p in root.iterdir() if p.is_dir()):
        marker = _json_file(folder / MARKER_NAME)
        cases = len(list((folder / "cases").glob("*.json")))
        if cases or marker:
            found.append(SavedRun(folder.name, folder, cases, marker or {}))
    return found


def write_marker(out_dir: Path, run_id: str, fields: dict[str, Any]) -> None:
    """``resume.json`` of a run that has just started (replacing a stopped run's, on resume)."""
    folder = saved_run_dir(out_dir, run_id)
    folder.mkdir(parents=True, exist_ok=True)
    write_atomically(folder / MARKER_NAME, json.dumps(fields, indent=1).encode("utf-8"))


def write_atomically(path: Path, data: bytes) -> None:
    """``path`` holds ``data`` whole, or keeps what it held: written beside it, then renamed
    over it (a process killed in between leaves a hidden temporary file, never half a
    record)."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}-{threading.get_ident()}.tmp")
    try:
        temporary.write_bytes(data)
        os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise


def check_resume(out_dir: Path, run_id: str, event: dict[str, Any], suite: bytes) -> SavedRun:
    """The stopped run ``--resume run_id`` continues; EventError (nothing started) when there
    is none under ``out_dir``, listing the ids there are, or when it ran another suite or
    event."""
    runs = {r.run_id: r for r in saved_runs(out_dir)}
    found = runs.get(run_id)
    if found is None:
        listed = ", ".join(
            f"{r.run_id} ({r.cases} finished cases)" for r in runs.values() if not r.running
        )
        raise EventError(
            f"--resume {run_id}: no stopped run with that id in {out_dir / RUNS_FOLDER}; "
            + (
                f"runs that can be resumed there: {listed}"
                if listed
                else "there is no stopped run to resume there (give the --out folder the "
                "stopped run wrote to, or leave --resume out to start a new run)"
            )
        )
    if found.running:
        raise EventError(
            f"--resume {run_id}: that run is still running (process {found.marker.get('pid')}); "
            "wait for it to end, or stop it first"
        )
    expected = found.marker.get("fingerprint")
    if expected and expected != fingerprint(event, suite):
        raise EventError(
            f"--resume {run_id}: that run was started with another suite, target or options; "
            "resume it with exactly the same command it was started with (less --resume), "
            "or leave --resume out to start a new run"
        )
    return found


def stopped_run_notices(out_dir: Path, *, resuming: str | None = None) -> list[str]:
    """One line per trace of a stopped run in ``out_dir``: saved records whose process is gone
    (with the ``--resume`` that runs the rest) and claim files of report sets that were never
    finished (removed when nothing else of the set was written: they only held the name)."""
    notices = []
    for run in saved_runs(out_dir):
        if run.run_id == resuming or run.running:
            continue
        notices.append(
            f"run {run.run_id} was stopped before it finished ({run.cases} finished cases "
            f"saved in {run.folder}); to run only the rest, repeat its command with "
            f"--resume {run.run_id}"
        )
    reports = out_dir / "test-reports"
    if reports.is_dir():
        for claim in sorted(reports.glob(f"*/*{CLAIM_NAME}")):
            notice = _stale_claim(claim)
            if notice:
                notices.append(notice)
    return notices


def _stale_claim(claim: Path) -> str | None:
    prefix = claim.name[: -len(CLAIM_NAME)]
    if (claim.parent / f"{prefix}{MANIFEST_NAME}").exists():
        return None  # a complete set
    body = _json_file(claim) or {}
    pid = body.get("pid")
    if not isinstance(pid, int) or process_alive(pid, body.get("host"), body.get("run_id")):
        return None  # a run in progress, or a claim that does not say whose it is
    others = sorted(
        p.name for p in claim.parent.iterdir() if p.name.startswith(prefix) and p != claim
    )
    run_id = body.get("run_id", "?")
    if not others:
        claim.unlink(missing_ok=True)
        return (
            f"removed {claim}: the claim of run {run_id}, which was stopped before it wrote "
            "any report"
        )
    return (
        f"{claim.parent / prefix}*: the report set of run {run_id} was never finished "
        f"(no manifest; {len(others)} files: {', '.join(others)}); it is never read as a "
        "baseline, and can be deleted"
    )


def _json_file(path: Path) -> dict[str, Any] | None:
    try:
        value = json.loads(path.read_bytes())
    except (OSError, ValueError):
        return None
    return value if isinstance(value, dict) else None


__all__ = [
    "MARKER_NAME",
    "SavedRun",
    "check_resume",
    "fingerprint",
    "mark_active",
    "saved_run_dir",
    "saved_runs",
    "stopped_run_notices",
    "this_process",
    "write_atomically",
    "write_marker",
]
