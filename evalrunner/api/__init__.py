"""The Python API: :func:`evaluate` (a local run, as the CLI does it), :func:`rescore` (a
finished run's stored answers scored again, no target call), :func:`start_aws` (a run of the
deployed stack), :func:`monitor_logs` (production interactions scored once each),
:func:`assert_case` (one answer against thresholds, in a test) and :class:`EvalRun` (the
finished run, with DataFrames)."""

from evalrunner.api.assertions import assert_case
from evalrunner.api.monitoring import MonitorRun, monitor_logs
from evalrunner.api.rescoring import rescore
from evalrunner.api.result import EvalRun
from evalrunner.api.runs import evaluate, start_aws

__all__ = [
    "EvalRun",
    "MonitorRun",
    "assert_case",
    "evaluate",
    "monitor_logs",
    "rescore",
    "start_aws",
]
