"""Keeping a run's long-lived objects out of CPython's cyclic collector while it runs.

A run allocates many short-lived objects per case, and the allocations trigger CPython's
cyclic collector; every so often a full collection walks every object of the process: the
imported libraries (moto, botocore, pandas and scikit-learn through nltk, ...) and, in a
local run, the embedded engine and S3 with the whole run. None of those becomes garbage
during the run, yet at 2,000 cases the walks were ~0.6 s of a 3.8 s run (issue 18).
``gc.freeze`` is the standard library's way to set long-lived objects aside; ``gc.unfreeze``
puts them back in the oldest generation afterwards, so a long-lived Python process (a
notebook) is left as it was. Garbage made inside the block is still collected.

Inside the block the collector's automatic *full* collections are paused too (its oldest
generation's threshold raised; young and middle collections go on, and reclaim the cycles
that die young, which is nearly all of them). A run's steps build large sets of objects
that live to their end (Prepare's cases, Aggregate's report rows), and each full collection
walked them all to find nothing: at 10,000 cases 14 of them, 0.5 s, every one of them
collecting nothing. The thresholds are put back when the outermost block ends.

Only a process that is the run's alone uses it (issue 30): the CLI around a local run
(``cli/running.py``) and the deployed Aggregate handler (``lambdas/_common.py``
``collector_frozen``). The engine and the pipeline's core never do, so the Python API leaves
a notebook's or a test session's collector as it found it. Blocks nest; only the outermost
thaws. A process that froze objects itself (a server after its imports) or turned the
collector off is left alone.

The thaw serves a process that goes on after the run. The ``evalrunner`` command does not: it
ends when its command does, so it runs inside :func:`held_until_exit`, where the outermost
block leaves everything frozen and full collections paused, and everything left is frozen at
the end. Thawing first cost the tail after the last answer a full collection of the whole
heap while the verdict was printed, and the interpreter's own collection at exit walked it
again: ~0.4 s and 1-2 s of a 300-case run's tail (issue 31, bench/RESULTS.md).
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_lock = threading.Lock()
_depth = 0  # blocks of ours open now (any thread)
_saved_thresholds: tuple[int, int, int] | None = None
_held = False  # inside held_until_exit: the process ends when the command does
#: The oldest generation's threshold inside a block: full collections wait for this many
#: middle-generation collections (CPython's default is 10).
_PAUSED_FULL_THRESHOLD = 1_000_000


@contextmanager
def older_objects_frozen() -> Iterator[None]:
    """Collect only the garbage made inside the block (see the module's docstring)."""
    global _depth, _saved_thresholds
    with _lock:
        ours = gc.isenabled() and (_depth > 0 or _held or not gc.get_freeze_count())
        if ours:
            if _depth == 0 and _saved_thresholds is None:
                _saved_thresholds = gc.get_threshold()
                young, middle, _ = _saved_thresholds
                gc.set_threshold(young, middle, _PAUSED_FULL_THRESHOLD)
            _depth += 1
            gc.freeze()
    if not ours:
        yield
        return
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0 and not _held:
                gc.unfreeze()
                if _saved_thresholds is not None:
                    gc.set_threshold(*_saved_thresholds)
                    _saved_thresholds = None


@contextmanager
def held_until_exit() -> Iterator[None]:
    """For a process that ends when the block does (the ``evalrunner`` command's ``main``):
    the blocks of :func:`older_objects_frozen` inside do not thaw, and whatever is left at the
    end is frozen too, so the interpreter's collection at exit skips it (objects that are
    only garbage in a cycle are not finalized then; the reports are written and closed by
    then, and the logs are flushed by ``atexit``, which runs earlier). Not for the Python
    API: a notebook goes on after a run."""
    global _held, _saved_thresholds
    with _lock:
        _held = gc.isenabled()
    try:
        yield
    finally:
        with _lock:
            if _held:
                gc.freeze()
            _held = False
            if _depth == 0 and _saved_thresholds is not None:  # the frozen heap is not walked
                gc.set_threshold(*_saved_thresholds)
                _saved_thresholds = None
