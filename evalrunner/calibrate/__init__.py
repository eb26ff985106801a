"""Calibration: how well each metric's pass/fail agrees with human verdicts on a finished run,
and the threshold that would agree best (``evalrunner calibrate``)."""

from evalrunner.calibrate.agreement import Calibration, MetricAgreement, calibrate
from evalrunner.calibrate.labels import LabelledRow, MetricLabels, read_labelled_run

__all__ = [
    "Calibration",
    "LabelledRow",
    "MetricAgreement",
    "MetricLabels",
    "calibrate",
    "read_labelled_run",
]
