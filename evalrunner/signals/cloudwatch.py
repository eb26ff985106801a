"""A monitor run's series as CloudWatch metrics (``put_metric_data``), which the stack's
alarms compare with their trailing baseline (``infra/parts/monitoring.py``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from evalrunner.signals.series import Datapoint

#: Datapoints per call: CloudWatch takes up to 1,000 per request (and 1 MB); a run adds
#: two per primary metric, so one call nearly always does.
PER_CALL = 500


def metric_datum(point: Datapoint) -> dict[str, Any]:
    """One ``MetricData`` entry. Averages and pass rates are plain numbers (a pass rate is a
    share, 0 to 1, as in the reports), so the unit is ``None``."""
    return {
        "MetricName": point.name,
        "Dimensions": [
            {"Name": "Target", "Value": point.target[:1024]},
            {"Name": "Suite", "Value": point.suite[:1024]},
            {"Name": "Metric", "Value": point.metric[:1024]},
        ],
        "Timestamp": point.timestamp,
        "Value": point.value,
        "Unit": "None",
    }


def put_series(client: Any, namespace: str, points: Sequence[Datapoint]) -> int:
    """Put ``points`` under ``namespace`` (a boto3 CloudWatch client); returns how many."""
    for start in range(0, len(points), PER_CALL):
        chunk = points[start : start + PER_CALL]
        client.put_metric_data(Namespace=namespace, MetricData=[metric_datum(p) for p in chunk])
    return len(points)
