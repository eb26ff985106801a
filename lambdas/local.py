"""The state machine's functions as the local engine runs them: the very handlers Lambda
runs, built over the engine's :class:`~evalrunner.pipeline.context.Runtime` (one per local
run, holding the session that reaches real-AWS targets from inside the mock).

This is where the laptop side composes the engine with the handlers, so the engine itself
imports nothing from ``lambdas`` (it is handed them)::

    engine = LocalEngine(pipeline=local_pipeline)

Not imported by any deployed function (the engine needs moto, which the Lambda layer leaves
out).
"""

from __future__ import annotations

from evalrunner.engine.local import PipelineHandlers
from evalrunner.pipeline.context import Runtime
from lambdas import aggregate, prepare, run_case, score
from lambdas._common import logger


def local_pipeline(runtime: Runtime, *, log_level: str = "WARNING") -> PipelineHandlers:
    """The four pipeline handlers over ``runtime``; their logs at ``log_level`` (a local
    run's stdout is the user's, so warnings and errors only by default)."""
    logger.setLevel(log_level)
    return PipelineHandlers(
        prepare=prepare.build(runtime),
        run_case=run_case.build(runtime),
        score=score.build(runtime),
        aggregate=aggregate.build(runtime),
    )
