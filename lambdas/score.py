"""In-process scoring of the whole run (the GPU Batch task runs the same function)."""

from typing import Any

from evalrunner.pipeline.context import Runtime
from evalrunner.pipeline.score import score_run
from evalrunner.run import RunRef
from lambdas._common import RUNTIME, Handler, logger, store_for


def build(runtime: Runtime) -> Handler:
    @logger.inject_lambda_context
    def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        run = RunRef.model_validate(event)
        return score_run(runtime.context(store_for(run.bucket, runtime), run.run_id)).wire()

    return handler


handler = build(RUNTIME)
