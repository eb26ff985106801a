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
from evalrunner.run import ManifestItem, RunCaseEvent
from lambdas._common import RUNTIME, Handler, logger, store_for


def build(runtime: Runtime) -> Handler:
    @logger.inject_lambda_context
    def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        task = RunCaseEvent.model_validate(event)
        store = store_for(task.bucket, runtime)
        item = task.item
        if isinstance(item, ManifestItem):  # one manifest item: the task shape before batches
            if task.failure is not None:
                return record_failure(store, task.run_id, item, task.failure).wire()
            return run_case(runtime.context(store, task.run_id), item).wire()
        run = runtime.context(store, task.run_id)
        if task.failure is not None:
            reply = record_batch_failure(run, item, task.failure)
        else:
            reply = run_batch(run, item, lambda: context.get_remaining_time_in_millis() / 1000)
        return reply.model_dump(mode="json")

    return handler


handler = build(RUNTIME)
