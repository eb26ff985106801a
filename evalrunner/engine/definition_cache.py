"""The state machine's parsed form, made once per process, not twice per run.

moto's interpreter parses a definition with ANTLR's Python runtime when the machine is
created and again when an execution starts: ~0.13 s of CPU for the pipeline's definition in
a fresh process, ~0.05 s warm (issue 18). The definition a local run deploys is the same text
run after run, so the parsed program is kept in memory for the process; a fresh process (one
CLI run) parses once instead of twice. Every caller gets its own copy (the program pickled
once, in memory, and each copy a fresh ``pickle.loads``), so no two executions share a
component, as none did when each parsed. Nothing is written to disk (issue 30: a per-user
pickle cache saved ~0.1 s a run and was not worth its ownership checks).
"""

from __future__ import annotations

import pickle
import threading
from collections.abc import Callable
from typing import Any

#: Definitions held per process (a test session deploys a few different ones).
_MEMORY_LIMIT = 32


class DefinitionCache:
    """Parsed programs by definition: ``parse(definition)`` answers as ``parser`` does,
    ``(program, tree)``, the tree ``None`` when the program came from the cache (moto's
    callers use the program only)."""

    def __init__(self, parser: Callable[[str], Any]) -> None:
        self._parser = parser
        self._memory: dict[str, bytes] = {}
        self._lock = threading.Lock()
        self.parses = 0  # how many times the parser really ran (for tests and benchmarks)

    def parse(self, definition: str) -> tuple[Any, Any]:
        with self._lock:
            blob = self._memory.get(definition)
        if blob is not None:
            return pickle.loads(blob), None
        program, tree = self._parser(definition)  # an invalid definition raises: not cached
        self.parses += 1
        try:
            blob = pickle.dumps(program, protocol=pickle.HIGHEST_PROTOCOL)
        except Exception:  # a program that cannot be pickled is simply not cached
            return program, tree
        with self._lock:
            if len(self._memory) >= _MEMORY_LIMIT:
                self._memory.pop(next(iter(self._memory)))
            self._memory[definition] = blob
        return program, tree
