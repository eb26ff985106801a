"""Signals of a monitor run where operators look: CloudWatch metrics, alarms on a drop
against the trailing baseline (deployed by ``infra/parts/monitoring.py``), an SNS message
listing the worst interactions, and, for a local run, the same series in the target's
history.

- :mod:`.settings`: whether and where a process publishes (``EVALRUNNER_SIGNALS_*``).
- :mod:`.series`: the series of a finished run (``Average`` and ``PassRate`` per primary
  metric, dimensions Target / Suite / Metric), and which runs are monitor runs.
- :mod:`.cloudwatch`: ``put_metric_data`` of those series.
- :mod:`.worst`: the worst interactions of a run, masked and cut, for the message.
"""
