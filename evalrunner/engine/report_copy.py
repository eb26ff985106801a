"""A local run's files on disk: the report set and the history page copied out of the
embedded bucket, each written whole or not at all, and the case records written as they are
stored (for ``--resume``); disk failures said in words."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from evalrunner.engine.saved_runs import saved_run_dir, write_atomically
from evalrunner.errors import ReportsNotWritten
from evalrunner.reports.summary import RunSummary


def download_set(summary: RunSummary, read: Callable[[str], bytes], out_dir: Path) -> list[Path]:
    """Copy the report set (each file read with ``read(key)``) into ``out_dir``, the manifest
    last, each file written whole or not at all. A write that fails (a full disk, an I/O
    error, a folder that became unwritable) is :class:`ReportsNotWritten`, naming the files
    that were written: the copy has no manifest then, so no reader (the baseline lookup
    above all) takes it."""
    files: list[Path] = []
    for key in summary.reports.keys():
        path = out_dir / key
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            write_atomically(path, read(key))
        except OSError as exc:
            raise ReportsNotWritten(write_failure(exc, path, files)) from None
        files.append(path)
    return files


def download_history(target: str, read: Callable[[str], bytes], out_dir: Path) -> list[str]:
    """Copy the target's history page as Aggregate refreshed it (absent if that failed).
    It is not part of the run's set (written after its manifest): a failure to write it is
    a notice for the user, not a failed run."""
    from evalrunner.reports.writers.history import history_keys

    notices = []
    for key in history_keys(target):
        try:
            data = read(key)
        except Exception:  # not written: the run's own reports are what matters
            continue
        path = out_dir / key
        try:
            write_atomically(path, data)
        except OSError as exc:
            notices.append(f"the history page {path} was not updated: {os_reason(exc)}")
    return notices


def local_history_notices(target: str, out_dir: Path) -> list[str]:
    """Rebuild the target's history page from every complete set in ``out_dir`` (not the
    embedded bucket's, which knows only the sets seeded when this run started: runs that
    finish together would each list only themselves). Not part of the run's set: a failure
    is a notice for the user, not a failed run."""
    from evalrunner.reports.writers.history import local_history

    try:
        local_history(out_dir, target)
    except OSError as exc:
        return [f"the history page of {target} was not updated: {os_reason(exc)}"]
    return []


def os_reason(exc: OSError) -> str:
    """An OS error in words (``No space left on device``), without Python's wrapping."""
    return exc.strerror or type(exc).__name__


def write_failure(exc: OSError, path: Path, written: list[Path]) -> str:
    """The one line a failed report copy prints: what failed, where, and what is left."""
    where = Path(exc.filename) if isinstance(exc.filename, str) else path
    partial = (
        f"the files written before it ({', '.join(str(p) for p in written)}) are an "
        "incomplete set with no manifest, never read as a baseline; delete them"
        if written
        else "no report file was written"
    )
    return f"the reports could not be written: {os_reason(exc)} ({where}); {partial}"


def remove_if_empty(folder: Path) -> None:
    try:
        folder.rmdir()
    except OSError:  # not empty (another run's saved records), or not there
        pass


class DurableRecords:
    """The embedded S3 client of a local run, which also writes each case record to
    ``out_dir/runs/<run_id>/cases/`` as it is stored: a finished case is durable the moment
    it finishes, as in the cloud (DESIGN.md), and a killed run keeps its work for
    ``--resume``. A failed disk write is remembered (and reported at the end), not raised:
    the run itself goes on in the embedded bucket."""

    def __init__(self, inner: Any, out_dir: Path) -> None:
        self._inner, self._out = inner, out_dir
        self._folders: set[Path] = set()
        self._lock = threading.Lock()
        self.failure: str | None = None

    def put_object(self, **parameters: Any) -> dict[str, Any]:
        reply: dict[str, Any] = self._inner.put_object(**parameters)
        parts = str(parameters.get("Key", "")).split("/")
        if len(parts) == 4 and parts[0] == "runs" and parts[2] == "cases":
            body = parameters.get("Body") or b""
            self._save(parts[1], parts[3], body.encode() if isinstance(body, str) else body)
        return reply

    def _save(self, run_id: str, name: str, data: bytes) -> None:
        folder = saved_run_dir(self._out, run_id) / "cases"
        try:
            if folder not in self._folders:
                folder.mkdir(parents=True, exist_ok=True)
                with self._lock:
                    self._folders.add(folder)
            write_atomically(folder / name, bytes(data))
        except OSError as exc:
            with self._lock:
                if self.failure is None:
                    self.failure = f"{os_reason(exc)} ({folder})"

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self._inner, name)
