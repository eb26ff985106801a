"""In-process scoring of the whole run (the GPU Batch task runs the same function)."""

from typing import Any

from evalrunner.pipeline.context import Runtime
from evalrunner.pipeline.score import score_run
from lambdas._common import RUNTIME, Handler, logger, store_for


def build(runtime: Runtime) -> Handler:
    @logger.inject_lambda_context
    def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        return score_run(runtime.context(store_for(event, runtime), event["run_id"]))

    return handler


handler = build(RUNTIME)
