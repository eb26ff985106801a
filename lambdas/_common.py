"""What every handler shares: the Powertools logger, the run store for the event's bucket, and
the container's :class:`~evalrunner.pipeline.context.Runtime` (one per warm container, so the
cases of a run share its configuration, target client, judge and model hub)."""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from typing import Any

from aws_lambda_powertools import Logger
from aws_lambda_powertools.metrics import MetricUnit, single_metric

from evalrunner.gc_freeze import older_objects_frozen
from evalrunner.pipeline.context import Runtime
from evalrunner.reports.summary import RunSummary
from evalrunner.storage import RunStore

logger = Logger(service=os.environ.get("POWERTOOLS_SERVICE_NAME", "evalrunner"))

#: The run contexts of this container; the local engine builds handlers over its own.
RUNTIME = Runtime()

#: A Lambda handler: the event and the Lambda context object.
Handler = Callable[[dict[str, Any], Any], Any]


def collector_frozen(handler: Handler) -> Handler:
    """``handler`` as Lambda calls it: inside :func:`~evalrunner.gc_freeze.older_objects_frozen`
    (a Lambda container's process is the handler's alone, so the imported libraries are set
    aside from the cyclic collector while it runs, and put back after). Only the deployed
    handlers are wrapped: the local engine runs the unwrapped ones inside the caller's
    process, whose collector the CLI sets and the Python API leaves alone."""

    @functools.wraps(handler)
    def frozen(event: dict[str, Any], context: Any) -> Any:
        with older_objects_frozen():
            return handler(event, context)

    return frozen


def store_for(bucket: str | None = None, runtime: Runtime = RUNTIME) -> RunStore:
    """The event's bucket, else ``runtime``'s configured one (its settings: the function's
    EVALRUNNER_BUCKET, or the local engine's embedded bucket), through ``runtime``'s client
    (the local engine's reaches its embedded S3 directly)."""
    return runtime.store(bucket or runtime.settings.require_bucket())


METRICS_NAMESPACE = os.environ.get("POWERTOOLS_METRICS_NAMESPACE", "evalrunner")


def emit_run_metrics(summary: RunSummary) -> int:
    """CloudWatch metrics (EMF, through the function's log) for the dashboard and alarms:
    PassRate and AverageScore per primary metric and target, and Regression per target.
    Only inside Lambda: locally the same handler runs in-process and stdout is the user's.
    """
    if not os.environ.get("AWS_LAMBDA_FUNCTION_NAME"):
        return 0
    emitted = 0
    target = summary.target
    for metric in summary.metrics:
        if not metric.primary:
            continue
        for name, value, unit in (
            ("PassRate", metric.pass_rate, MetricUnit.Percent),
            ("AverageScore", metric.average, MetricUnit.NoUnit),
        ):
            if value is None:
                continue
            scaled = value * 100 if unit is MetricUnit.Percent else value
            with single_metric(
                name=name, unit=unit, value=scaled, namespace=METRICS_NAMESPACE
            ) as m:
                m.add_dimension(name="Target", value=target)
                m.add_dimension(name="Metric", value=metric.metric)
            emitted += 1
    with single_metric(
        name="Regression",
        unit=MetricUnit.Count,
        value=int(summary.regressed),
        namespace=METRICS_NAMESPACE,
    ) as m:
        m.add_dimension(name="Target", value=target)
    return emitted + 1
