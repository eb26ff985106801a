"""A local monitor run, shared by ``evalrunner monitor`` and :func:`evalrunner.monitor_logs`:
under the watermark's lock, plan, write the chosen interactions as a suite of logged answers
(PII-masked unless turned off), run it in the embedded engine, and take what was scored."""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalrunner.monitor.model import MonitorError
from evalrunner.monitor.runner import (
    MonitorOptions,
    Plan,
    as_far_as,
    commit,
    plan,
    scored_cases,
    suite_rows,
)
from evalrunner.monitor.watermark import LocalWatermarks

if TYPE_CHECKING:
    from evalrunner.engine.run_types import RunResult
    from evalrunner.privacy import PiiMasker

#: Runs the event over the suite file in the embedded engine (the CLI's shows progress).
Execute = Callable[[dict[str, Any], Path], "RunResult"]


@dataclass(frozen=True)
class MonitorOutcome:
    """What a local monitor run did: its plan, and the run (None: nothing was scored)."""

    plan: Plan
    result: RunResult | None
    #: Why nothing was scored (None when something was)
    message: str | None = None


def run_monitor(
    options: MonitorOptions,
    out_dir: Path,
    event_for: Callable[[str, str], dict[str, Any]],
    execute: Execute,
    *,
    mask_pii: bool | PiiMasker = True,
    on_plan: Callable[[Plan], None] | None = None,
) -> MonitorOutcome:
    """``event_for(suite file name, monitor name)`` makes the run's event; ``execute`` runs
    it. The watermark takes every new interaction once the run has scored them (a stopped
    run: those it scored); a second run over the same logs returns with nothing to score."""
    options.check()
    store = LocalWatermarks(out_dir)
    name = options.monitor_name()
    with store.locked(name):
        found = plan(options, store, masker=None if isinstance(mask_pii, bool) else mask_pii)
        if on_plan is not None:
            on_plan(found)
        if not found.found and found.problems:
            raise MonitorError(
                f"no record of {options.source} could be read; see the problems above"
            )
        if not found.chosen:
            commit(found, store, None, datetime.now(UTC))
            message = (
                f"nothing new to score for {name} since its watermark"
                if not found.new
                else f"the sample took none of the {len(found.new)} new interaction(s)"
            )
            if found.pending:
                message += f" ({found.pending} trace(s) pending, waiting for their root span)"
            return MonitorOutcome(found, None, message)
        from evalrunner.api.inputs import suite_file

        with tempfile.TemporaryDirectory(prefix="evalrunner-monitor-") as folder:
            rows = suite_rows(found.chosen, mask_pii=mask_pii)
            suite = suite_file(rows, Path(folder), name)
            result = execute(event_for(suite.name, name), suite)
        taken = found
        if result.summary.partial:  # take what it scored, leave the rest new
            taken = as_far_as(found, scored_cases(result.out_dir / result.summary.reports.report))
        commit(taken, store, result.summary.run_id, datetime.now(UTC))
        return MonitorOutcome(found, result)
