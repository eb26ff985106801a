"""One test case. With ``failure`` in the event it records the Catch path instead."""

from typing import Any

from evalrunner.pipeline.context import Runtime
from evalrunner.pipeline.run_case import record_failure, run_case
from lambdas._common import RUNTIME, Handler, logger, store_for


def build(runtime: Runtime) -> Handler:
    @logger.inject_lambda_context
    def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        store = store_for(event, runtime)
        if "failure" in event:
            return record_failure(store, event["run_id"], event["item"], event["failure"])
        return run_case(runtime.context(store, event["run_id"]), event["item"])

    return handler


handler = build(RUNTIME)
