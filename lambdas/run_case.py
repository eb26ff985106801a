"""A Map task: a batch of test cases (or, from an older execution, one case). With
``failure`` in the event it records the Catch path instead."""

from typing import Any

from evalrunner.pipeline.context import Runtime
from evalrunner.pipeline.run_case import (
    record_batch_failure,
    record_failure,
    run_batch,
    run_case,
)
from lambdas._common import RUNTIME, Handler, logger, store_for


def build(runtime: Runtime) -> Handler:
    @logger.inject_lambda_context
    def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        store = store_for(event, runtime)
        item = event["item"]
        if "count" not in item:  # one manifest item: the task shape before batches
            if "failure" in event:
                return record_failure(store, event["run_id"], item, event["failure"])
            return run_case(runtime.context(store, event["run_id"]), item)
        run = runtime.context(store, event["run_id"])
        if "failure" in event:
            return record_batch_failure(run, item, event["failure"])
        return run_batch(run, item, lambda: context.get_remaining_time_in_millis() / 1000)

    return handler


handler = build(RUNTIME)
