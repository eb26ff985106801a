"""What the Aggregate step does for a monitor run once its reports are written: put the
run's series into CloudWatch and pick the worst interactions for the run's notification."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from evalrunner.reports.summary import RunSummary
from evalrunner.signals.cloudwatch import put_series
from evalrunner.signals.series import is_monitor_run, run_series
from evalrunner.signals.settings import SignalSettings
from evalrunner.signals.worst import WorstInteraction, read_worst
from evalrunner.storage import RunStore


class RunSignals(BaseModel):
    """What was published for one run."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    #: Datapoints put into CloudWatch (0: not a monitor run, or no namespace configured).
    datapoints: int = 0
    #: The worst interactions, for the run's SNS message.
    worst: list[WorstInteraction] = Field(default_factory=list)


def run_signals(
    summary: RunSummary,
    store: RunStore,
    settings: SignalSettings,
    *,
    cloudwatch: Callable[[], Any],
    notify: bool,
) -> RunSignals:
    """Publish ``summary``'s series (monitor runs only, when a namespace is configured) and,
    when a notification will go out (``notify``), read its worst interactions.
    ``cloudwatch`` makes a boto3 CloudWatch client, only when one is needed (a local run
    makes none)."""
    if not is_monitor_run(summary):
        return RunSignals()
    put = 0
    if settings.namespace:
        put = put_series(cloudwatch(), settings.namespace, run_series(summary))
    worst = []
    if notify:
        worst = read_worst(store, summary, settings.worst, text_chars=settings.text_chars)
    return RunSignals(datapoints=put, worst=worst)
