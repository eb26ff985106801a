"""The embedded default: the deployed state machine, run on this machine."""

from evalrunner.engine.local import LocalEngine, Progress, RunResult

__all__ = ["LocalEngine", "Progress", "RunResult"]
