"""The embedded default: the deployed state machine, run on this machine."""

from evalrunner.engine.local import LocalEngine
from evalrunner.engine.run_types import Progress, RunResult

__all__ = ["LocalEngine", "Progress", "RunResult"]
