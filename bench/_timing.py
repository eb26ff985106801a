"""Clocks shared by the benches (the model-scoring bench's Ragas side runs in another venv,
so this module needs nothing but the standard library)."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any


def clocks() -> tuple[float, float]:
    """Wall time and this process's CPU time (all threads: torch's included)."""
    return time.perf_counter(), time.process_time()


def machine_busy() -> float:
    """CPU seconds the whole machine has been busy since boot (/proc/stat; 0 elsewhere):
    minus this process's CPU time, what other processes took during a repetition."""
    try:
        fields = Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]
    except OSError:
        return 0.0
    user, nice, system, _idle, _iowait, irq, softirq, steal = map(int, fields[:8])
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


def timed(name: str, fn: Callable[..., Any], spent: dict[str, float]) -> Callable[..., Any]:
    """``fn``, adding the CPU time of the calling thread it takes to ``spent[name]``."""

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        start = time.thread_time()
        try:
            return fn(*args, **kwargs)
        finally:
            spent[name] += time.thread_time() - start

    return wrapper
