"""The Python API: :func:`evaluate` (a local run, as the CLI does it), :func:`rescore` (a
finished run's stored answers scored again, no target call), :func:`start_aws` (a run of the
deployed stack), :func:`monitor_logs` (production interactions scored once each),
:func:`assert_case` (one answer against thresholds, in a test), :class:`EvalRun` (the
finished run, with DataFrames) and :func:`run_project` (the project file's targets × suites
matrix)."""

from evalrunner.api.assertions import assert_case
from evalrunner.api.monitoring import MonitorRun, monitor_logs
from evalrunner.api.projects import ProjectResult, run_project
from evalrunner.api.rescoring import rescore
from evalrunner.api.result import EvalRun
from evalrunner.api.runs import evaluate, start_aws

__all__ = [
    "EvalRun",
    "MonitorRun",
    "ProjectResult",
    "assert_case",
    "evaluate",
    "monitor_logs",
    "rescore",
    "run_project",
    "start_aws",
]
