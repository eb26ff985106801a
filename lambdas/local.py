"""The state machine's functions as the local engine runs them: the very handlers Lambda
runs, built over the engine's :class:`~evalrunner.pipeline.context.Runtime` (one per local
run, holding the session that reaches real-AWS targets from inside the mock).

``pyproject.toml`` registers :func:`local_pipeline` under the entry point group
``evalrunner.local_pipeline``; :func:`evalrunner.launch.local_pipeline` finds it there and
hands it to the engine, so the core imports nothing from ``lambdas`` (it is handed them)::

    engine = LocalEngine(pipeline=local_pipeline)

Not imported by any deployed function (the engine needs moto, which the Lambda layer leaves
out).
"""

from __future__ import annotations

import logging
import sys
from typing import Any

from evalrunner.engine.run_types import PipelineHandlers
from evalrunner.pipeline.context import Runtime
from lambdas import aggregate, prepare, run_case, score
from lambdas._common import logger


class _Stderr:
    """Whatever ``sys.stderr`` is when a line is written (a test's capture, a redirect made
    after the first run), for a handler built once per process."""

    def write(self, text: str) -> Any:
        return sys.stderr.write(text)

    def flush(self) -> None:
        sys.stderr.flush()


def local_pipeline(runtime: Runtime, *, log_level: str = "WARNING") -> PipelineHandlers:
    """The four pipeline handlers over ``runtime``; their logs at ``log_level``, on stderr:
    a local run's stdout is the user's (``--json`` prints the summary there, for a pipe),
    so warnings and errors only by default, and never among the output."""
    logger.setLevel(log_level)
    handler = logger.registered_handler
    if isinstance(handler, logging.StreamHandler):
        handler.setStream(_Stderr())
    return PipelineHandlers(
        prepare=prepare.build(runtime),
        run_case=run_case.build(runtime),
        score=score.build(runtime),
        aggregate=aggregate.build(runtime),
    )
