"""Report sets: claiming a run's prefix, publishing its files, recognising complete sets.

A run's reports share one prefix, ``test-reports/<target>/<yymmdd-hhmmss>-``. Two rules keep
sets from mixing or being half-read:

* **Claim first.** The prefix is claimed atomically before anything is written: in S3 by a
  conditional put of ``<prefix>claim.json`` (``If-None-Match: *``), locally (the ``--out``
  folder a local run copies into) by an exclusive create of the same file. A run that loses
  the race takes the next suffix (``<stamp>-2-``, ``-3-`` ...). Two runs of one target in the
  same second (a CI matrix, a script) so write two sets, never one mixed set.
* **Manifest last.** Aggregate writes every report, then ``<prefix>manifest.json`` listing
  each file with its size and SHA-256. A set without a manifest (a crashed or interrupted
  Aggregate, a copy cut short) is incomplete: the baseline lookup, the local engine's seeding
  and the leaderboard's run-id lookup ignore it, and the files they read are checked against
  the manifest.
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from evalrunner.errors import StorageError
from evalrunner.jsonout import dump_json
from evalrunner.reports.summary import RunSummary
from evalrunner.storage import REPORTS_PREFIX, RunStore

CLAIM_NAME = "claim.json"
MANIFEST_NAME = "manifest.json"
SUMMARY_NAME = "summary.json"
REPORT_NAME = "report.json"
#: How many suffixes a claim tries before giving up (runs of one target in one second).
MAX_CLAIM_ATTEMPTS = 1000

# -- claiming ------------------------------------------------------------------------------

_local_lock = threading.Lock()
_local_roots: list[Path] = []


@contextmanager
def claiming_in(out_dir: Path) -> Iterator[None]:
    """While inside, a prefix claimed in the run bucket must also be free in ``out_dir``
    (the folder a local run copies its reports into), claimed there by exclusive create."""
    with _local_lock:
        _local_roots.append(Path(out_dir))
    try:
        yield
    finally:
        with _local_lock:
            _local_roots.remove(Path(out_dir))


def claim_local(out_dir: Path, prefix: str, body: bytes) -> bool:
    """Claim ``prefix`` under ``out_dir``: True when this call created its claim file.

    ``O_CREAT | O_EXCL`` is atomic on local file systems, so of two runs that try the same
    prefix exactly one wins. Files of a set written before claims existed also count as
    taken."""
    claim = out_dir / f"{prefix}{CLAIM_NAME}"
    claim.parent.mkdir(parents=True, exist_ok=True)
    stem = claim.name[: -len(CLAIM_NAME)]
    if any(p.name.startswith(stem) for p in claim.parent.iterdir()):
        return False
    try:
        fd = os.open(claim, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
    except FileExistsError:
        return False
    with os.fdopen(fd, "wb") as handle:
        handle.write(body)
    return True


def candidate_prefixes(target: str, now: datetime) -> Iterator[str]:
    """``<stamp>-``, then ``<stamp>-2-``, ``<stamp>-3-`` ..."""
    stamp = f"{REPORTS_PREFIX}{target}/{now:%y%m%d-%H%M%S}"
    yield f"{stamp}-"
    for n in range(2, MAX_CLAIM_ATTEMPTS + 1):
        yield f"{stamp}-{n}-"


def run_order(summary: RunSummary) -> tuple[str, int, str]:
    """How runs of one target sort, oldest first: by start (to the second), then by the order
    they claimed their report prefixes in that second (``<stamp>-`` first, then
    ``<stamp>-2-`` ...: claims are made at the start, in turn), then by id. Two runs a second
    apart are common now that a small local run takes about a second; their ids' random
    suffixes do not say which came first."""
    name = summary.reports.manifest[: -len(MANIFEST_NAME)].rsplit("/", 1)[-1]
    parts = name.rstrip("-").split("-")
    claim = int(parts[2]) if len(parts) > 2 and parts[2].isdigit() else 1
    return summary.started_at, claim, summary.run_id


def claim_report_prefix(store: RunStore, target: str, now: datetime, run_id: str) -> str:
    """Claim a free report prefix for ``run_id`` in the bucket (and in every local folder
    registered with :func:`claiming_in`) and return it."""
    body = {"run_id": run_id, "claimed_at": now.isoformat(timespec="seconds")}
    data = dump_json(body).encode("utf-8")
    # A local claim also says which process made it: a later run that finds the claim
    # without a manifest, and that process gone, knows the run was killed (engine/saved_runs).
    local = dump_json({**body, "pid": os.getpid(), "host": socket.gethostname()}).encode()
    with _local_lock:
        roots = list(_local_roots)
    for prefix in candidate_prefixes(target, now):
        if store.list_keys(prefix):  # a set from before claims existed, or seeded
            continue
        if not store.put_if_absent(f"{prefix}{CLAIM_NAME}", data, "application/json"):
            continue
        if all(claim_local(root, prefix, local) for root in roots):
            return prefix
    raise StorageError(
        f"no free report prefix for {target!r} at {now:%y%m%d-%H%M%S}: "
        f"{MAX_CLAIM_ATTEMPTS} runs already claimed that second; start the run again"
    )


# -- publishing ----------------------------------------------------------------------------


def manifest_key(prefix: str) -> str:
    return f"{prefix}{MANIFEST_NAME}"


def file_entry(data: bytes) -> dict[str, Any]:
    """A file as the manifest lists it: its size and SHA-256."""
    return {"bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}


def build_manifest(run_id: str, prefix: str, files: Mapping[str, bytes]) -> dict[str, Any]:
    """What a complete set holds: every file's key, size and SHA-256."""
    return manifest_of(run_id, prefix, {key: file_entry(data) for key, data in files.items()})


def manifest_of(run_id: str, prefix: str, entries: Mapping[str, dict[str, Any]]) -> dict[str, Any]:
    return {"run_id": run_id, "prefix": prefix, "files": dict(entries)}


class SetWriter:
    """Writes a report set: files in order, then the manifest. Until :meth:`publish` the
    set is incomplete for every reader. A retried Aggregate rewrites its own set; while it
    does, the earlier manifest no longer matches the files readers check (summary.json,
    report.json), so they skip the set until the new manifest is written."""

    def __init__(self, store: RunStore, run_id: str, prefix: str) -> None:
        self.store, self.run_id, self.prefix = store, run_id, prefix
        # Each file's entry, not its bytes: the set's files are not all held until the end.
        self.written: dict[str, dict[str, Any]] = {}

    def put(self, key: str, data: bytes, content_type: str) -> None:
        # Hash what was stored: the store redacts secrets, and readers check stored bytes.
        self.written[key] = file_entry(self.store.put_bytes(key, data, content_type))

    def put_json(self, key: str, value: Any) -> None:
        self.put(key, dump_json(value).encode("utf-8"), "application/json")

    def publish(self) -> str:
        """Write the manifest, last: from now on the set is complete."""
        key = manifest_key(self.prefix)
        self.store.put_json(key, manifest_of(self.run_id, self.prefix, self.written))
        return key


# -- reading -------------------------------------------------------------------------------


def verified(manifest: Any, key: str, data: bytes) -> bool:
    """Whether ``data`` is the file the manifest lists under ``key``."""
    if not isinstance(manifest, dict) or not isinstance(manifest.get("files"), dict):
        return False
    entry = manifest["files"].get(key)
    return isinstance(entry, dict) and entry.get("sha256") == hashlib.sha256(data).hexdigest()


@dataclass(frozen=True)
class CompleteSet:
    """A complete report set: its summary, and its manifest for checking the files read
    next."""

    summary: RunSummary
    manifest: dict[str, Any]


def read_summary(data: bytes | None) -> RunSummary | None:
    """A summary.json's content, or None when it is not one (unreadable, not JSON, not a
    run summary): such a set is skipped by every reader, like one without a manifest."""
    if data is None:
        return None
    try:
        return RunSummary.model_validate_json(data)
    except ValidationError:
        return None


def complete_summaries(
    store: RunStore, target: str, rejected: list[str] | None = None
) -> list[CompleteSet]:
    """The summaries of ``target``'s complete sets in the bucket (manifest present, summary
    as listed in it), each with its manifest. A set that has a manifest but fails it (its
    summary missing, altered or unreadable, the manifest itself unreadable) is skipped too,
    and its prefix added to ``rejected``: it was finished once, so skipping it silently
    would hide that a baseline was lost. (A set without a manifest is being written, or was
    never finished: not news.)"""
    keys = set(store.list_keys(f"{REPORTS_PREFIX}{target}/"))
    out = []
    for key in sorted(keys):
        if not key.endswith(MANIFEST_NAME):
            continue
        prefix = key[: -len(MANIFEST_NAME)]
        summary_key = f"{prefix}{SUMMARY_NAME}"
        try:
            manifest = store.get_json_or_none(key)
        except ValueError:  # not JSON
            manifest = None
        data = store.get_bytes_or_none(summary_key) if summary_key in keys else None
        summary = read_summary(data) if data is not None else None
        if (
            data is None
            or summary is None
            or not isinstance(manifest, dict)
            or not verified(manifest, summary_key, data)
        ):
            if rejected is not None:
                rejected.append(prefix)
            continue
        out.append(CompleteSet(summary, manifest))
    return out


def read_verified(store: RunStore, manifest: Any, key: str) -> bytes | None:
    """A file of a complete set, or None when it is missing or not the listed file."""
    try:
        data = store.get_bytes(key)
    except StorageError:
        return None
    return data if verified(manifest, key, data) else None


def local_complete_sets(folder: Path) -> Iterator[tuple[str, Path, dict[str, Any]]]:
    """``(prefix name, manifest path, manifest)`` of each complete set in a local target
    folder (``<out>/test-reports/<target>/``)."""
    if not folder.is_dir():
        return
    for path in sorted(folder.glob(f"*{MANIFEST_NAME}")):
        manifest = _json_or_none(_read(path))
        if isinstance(manifest, dict) and isinstance(manifest.get("files"), dict):
            yield path.name[: -len(MANIFEST_NAME)], path, manifest


def local_verified(out_dir: Path, manifest: dict[str, Any], key: str) -> bytes | None:
    """A local copy of a set's file, or None when missing or not the listed file."""
    data = _read(out_dir / key)
    return data if data is not None and verified(manifest, key, data) else None


def _read(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except OSError:
        return None


def _json_or_none(data: bytes | None) -> Any:
    if data is None:
        return None
    try:
        return json.loads(data)
    except ValueError:
        return None


__all__ = [
    "CLAIM_NAME",
    "MANIFEST_NAME",
    "CompleteSet",
    "SetWriter",
    "claim_local",
    "claim_report_prefix",
    "claiming_in",
    "complete_summaries",
    "local_complete_sets",
    "local_verified",
    "read_summary",
    "read_verified",
]
