"""evalrunner: regression testing for RAG and LLM agents.

The core library knows nothing of Lambda: the handlers in ``lambdas/`` parse their event, call
into this package and return. The same code runs in the cloud and in the embedded local engine.
"""

__version__ = "0.1.0"

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from evalrunner.api import (
        EvalRun,
        MonitorRun,
        assert_case,
        evaluate,
        monitor_logs,
        rescore,
        run_project,
        start_aws,
    )
    from evalrunner.evaluators.base import Evaluator, Sample, Scored
    from evalrunner.evaluators.plugins import metric
    from evalrunner.redteam.api import red_team
    from evalrunner.workflow.api import run_workflow

#: What ``import evalrunner`` offers, loaded on first use: the Lambda handlers import this
#: package too, and must not pay for pandas or the engine.
_LAZY = dict.fromkeys(
    (
        "evaluate",
        "rescore",
        "start_aws",
        "assert_case",
        "EvalRun",
        "run_project",
        "monitor_logs",
        "MonitorRun",
    ),
    "evalrunner.api",
)
# Writing a metric of your own: the decorator, what it is given and what it may return.
_LAZY.update(metric="evalrunner.evaluators.plugins")
# A red-team run (``evalrunner redteam``): the package is ``evalrunner.redteam``.
_LAZY.update(red_team="evalrunner.redteam.api")
# ``evalrunner workflow``: the package is ``evalrunner.workflow``.
_LAZY.update(run_workflow="evalrunner.workflow.api")
_LAZY.update(dict.fromkeys(("Evaluator", "Sample", "Scored"), "evalrunner.evaluators.base"))

__all__ = [
    "EvalRun",
    "Evaluator",
    "MonitorRun",
    "Sample",
    "Scored",
    "__version__",
    "assert_case",
    "evaluate",
    "metric",
    "monitor_logs",
    "red_team",
    "rescore",
    "run_project",
    "run_workflow",
    "start_aws",
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'evalrunner' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)
