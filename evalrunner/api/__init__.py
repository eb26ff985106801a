"""The Python API: :func:`evaluate` (a local run, as the CLI does it), :func:`start_aws` (a
run of the deployed stack) and :class:`EvalRun` (the finished run, with DataFrames)."""

from evalrunner.api.result import EvalRun
from evalrunner.api.runs import evaluate, start_aws

__all__ = ["EvalRun", "evaluate", "start_aws"]
