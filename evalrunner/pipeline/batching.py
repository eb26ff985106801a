"""How a run's manifest is cut into Map tasks (issue 18): Prepare writes the slices, the
cost estimate counts the tasks. See :class:`evalrunner.run.ManifestBatch` for why."""

from __future__ import annotations

from evalrunner.event import RunEvent
from evalrunner.run import ManifestBatch

#: The most cases per task Prepare chooses by itself: at it a task's fixed cost (~4 ms of
#: the embedded interpreter's CPU, a Lambda invoke and a child execution in the cloud) is
#: about a twentieth of its cases' cost when a case costs ~1 ms (lexical metrics, no target
#: to wait for); beyond it a failed task (a crashed Lambda) would take more cases with it.
#: (25 until issue 18's last pass, when a case cost ~2 ms; 25 → 100 saved 9% of the CPU of
#: a 10,000-case run.)
MAX_AUTO_CASES_PER_TASK = 100
#: Tasks per concurrent slot Prepare keeps at least, so that uneven target latencies even out
#: (the slowest slot's last task is at most an eighth of the run).
TASKS_PER_SLOT = 8


def auto_cases_per_task(item_count: int, max_concurrency: int) -> int:
    """Cases per RunCase task when the event does not say: one until every concurrent slot
    would have :data:`TASKS_PER_SLOT` tasks, then as many as keeps that many, up to
    :data:`MAX_AUTO_CASES_PER_TASK`. An I/O-bound run keeps ``max_concurrency`` target calls
    in flight either way (each slot runs its task's cases one after another); a CPU-bound run
    stops paying a task's overhead per case."""
    per_task = item_count // (max(1, max_concurrency) * TASKS_PER_SLOT)
    return max(1, min(MAX_AUTO_CASES_PER_TASK, per_task))


def batches(item_count: int, per_task: int) -> list[ManifestBatch]:
    """The manifest cut into consecutive slices of ``per_task`` items (the last shorter)."""
    return [
        ManifestBatch(first=first, count=min(per_task, item_count - first))
        for first in range(0, item_count, per_task)
    ]


def cases_per_task(event: RunEvent, item_count: int) -> int:
    """The event's ``cases_per_task``, else :func:`auto_cases_per_task`."""
    return event.cases_per_task or auto_cases_per_task(item_count, event.max_concurrency)
