"""Clocks shared by the model-scoring bench and its Ragas side, which runs in another venv
(so this module needs nothing but the standard library)."""

from __future__ import annotations

import os
import time
from pathlib import Path


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
