"""The state machine's parsed form, made once per user and moto version, not once per run.

moto's interpreter parses a definition with ANTLR's Python runtime when the machine is
created and again when an execution starts: ~0.13 s of CPU for the pipeline's definition in
a fresh process, ~0.05 s warm, every run (issue 18: start-up is most of what separates a
2,000-case local run from a scorer that writes no reports). The definition a local run
deploys is the same text run after run, so the parsed program is kept, pickled, in memory and
under the user's cache directory. Every caller gets its own copy (``pickle.loads`` builds
fresh objects), so no two executions share a component, as none did when each parsed.

Pickle runs code on load, so a cache file is read only from a directory the user owns and
nobody else may write to, like Jinja's bytecode cache. The key covers the definition text,
the moto version and the Python version, so an upgrade parses afresh. Reading and writing
are best-effort: any failure means the definition is parsed, as it always was. By hand:
moto offers no serialisable form of a parse, and no cache library handles pickled objects
with this ownership check.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import sys
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from evalrunner.user_cache import is_private

#: Definitions held in memory per process (a test session deploys a few different ones).
_MEMORY_LIMIT = 32


class DefinitionCache:
    """Parsed programs by definition: ``parse(definition)`` answers as ``parser`` does,
    ``(program, tree)``, the tree ``None`` when the program came from the cache (moto's
    callers use the program only)."""

    def __init__(self, parser: Callable[[str], Any], *, version: str, folder: Path | None) -> None:
        self._parser = parser
        self._version = version
        self._folder = folder
        self._memory: dict[str, bytes] = {}
        self._lock = threading.Lock()
        self.parses = 0  # how many times the parser really ran (for tests and benchmarks)

    def key(self, definition: str) -> str:
        text = f"{self._version}\0{sys.version}\0{definition}"
        return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()

    def parse(self, definition: str) -> tuple[Any, Any]:
        key = self.key(definition)
        with self._lock:
            blob = self._memory.get(key)
        if blob is None:
            blob = self._read(key)
        if blob is not None:
            try:
                return pickle.loads(blob), None
            except Exception:  # a damaged or foreign file: parse as if absent
                pass
        program, tree = self._parser(definition)  # an invalid definition raises: not cached
        self.parses += 1
        try:
            blob = pickle.dumps(program, protocol=pickle.HIGHEST_PROTOCOL)
        except Exception:  # a program that cannot be pickled is simply not cached
            return program, tree
        with self._lock:
            if len(self._memory) >= _MEMORY_LIMIT:
                self._memory.pop(next(iter(self._memory)))
            self._memory[key] = blob
        self._write(key, blob)
        return program, tree

    # -- the user's cache folder --------------------------------------------------------------
    def _read(self, key: str) -> bytes | None:
        if self._folder is None or not is_private(self._folder):
            return None
        path = self._folder / f"{key}.pickle"
        try:
            if not is_private(path):
                return None
            blob = path.read_bytes()
        except OSError:
            return None
        with self._lock:
            self._memory[key] = blob
        return blob

    def _write(self, key: str, blob: bytes) -> None:
        if self._folder is None:
            return
        try:
            self._folder.mkdir(parents=True, exist_ok=True, mode=0o700)
            if not is_private(self._folder):
                return
            handle, temporary = tempfile.mkstemp(dir=self._folder, suffix=".tmp")
            try:
                with os.fdopen(handle, "wb") as file:
                    file.write(blob)
                os.replace(temporary, self._folder / f"{key}.pickle")
            except BaseException:
                Path(temporary).unlink(missing_ok=True)
                raise
        except OSError:  # a read-only home, a full disk: the next run parses again
            return
