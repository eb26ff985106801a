"""Prove that work grows linearly with its input without asserting wall-clock time.

A test that says "100k characters in under 1 s" fails on a loaded machine (1.2 s was seen on
a shared CI runner) and passes a quadratic algorithm on a fast one. What such a test means is
"no catastrophic backtracking, no quadratic loop", and that is a statement about *shape*:
time on the whole input against time on a quarter of it. Linear work gives a ratio near 4
(less when fixed costs count), quadratic about 16, catastrophic backtracking far more.

The clock is this thread's CPU time (``time.thread_time``), which other processes competing
for the machine do not advance; each size is measured a few times with the garbage collector
off and the fastest run kept, as :mod:`timeit` does. tests/unit/test_scaling_helper.py shows
the check failing on a quadratic scan and passing a linear one. The backstop on the whole input is
generous (:data:`BACKSTOP_SECONDS` of CPU): only a pathological case comes near it.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

#: The whole input is a quarter's size times this; linear work scales by about as much.
SHRINK = 4

#: Above this ratio the work is not linear: linear gives about 4, quadratic about 16. The
#: margin absorbs what CPU time still varies with (caches, frequency, allocation).
MAX_RATIO = 10.0

#: CPU seconds the whole input may take at most; only a pathological case comes near it.
BACKSTOP_SECONDS = 30.0

REPEATS = 3


def cpu_seconds(work: Callable[[], object], repeats: int = REPEATS) -> float:
    """The least CPU time of this thread, over ``repeats`` runs of ``work``."""
    best = float("inf")
    enabled = gc.isenabled()
    gc.disable()
    try:
        for _ in range(repeats):
            start = time.thread_time()
            work()
            best = min(best, time.thread_time() - start)
    finally:
        if enabled:
            gc.enable()
    return best


def assert_linear(run: Callable[[T], object], small: T, large: T) -> None:
    """Assert ``run(large)`` costs at most :data:`MAX_RATIO` times ``run(small)``, where
    ``large`` is :data:`SHRINK` times the size of ``small``, and stays under the backstop."""
    small_cost = cpu_seconds(lambda: run(small), REPEATS)
    # Fewer runs of the large input: it is where the time goes, and its noise is relatively
    # smaller; the small one, the divisor, gets the extra run.
    large_cost = cpu_seconds(lambda: run(large), REPEATS - 1)
    assert large_cost < BACKSTOP_SECONDS, f"{large_cost:.1f} s of CPU on the whole input"
    # A floor of 1 ms: below it, the small run is all fixed cost and the ratio means nothing.
    ratio = large_cost / max(small_cost, 1e-3)
    assert ratio < MAX_RATIO, (
        f"not linear: {SHRINK}x the input cost {ratio:.1f}x the CPU time "
        f"({small_cost * 1e3:.1f} ms -> {large_cost * 1e3:.1f} ms)"
    )


def quarter(text: str) -> str:
    """The first quarter of ``text``: the same adversarial pattern at a quarter of the size."""
    return text[: len(text) // SHRINK]
