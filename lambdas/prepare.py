"""Prepare step. An invalid event or suite raises: the execution fails with the message."""

from typing import Any

from evalrunner.event import read_event
from evalrunner.pipeline.context import Runtime
from evalrunner.pipeline.prepare import prepare_run
from lambdas._common import RUNTIME, Handler, logger, store_for


def build(runtime: Runtime) -> Handler:
    """Prepare reads no run context (it writes the run's configuration); it takes from
    ``runtime`` only the judge, for the perturbations the judge applies (misinformation)."""

    @logger.inject_lambda_context
    def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        spec = read_event(event["event"])  # parsed at the door: a bad event fails here
        store = store_for(None, runtime)
        output = prepare_run(
            spec,
            store,
            make_judge=lambda judge: runtime.judge_for(judge, store),
            settings=runtime.settings,
        )
        logger.info("run prepared", extra={"run_id": output.run_id, "items": output.item_count})
        return output.model_dump(mode="json")

    return handler


handler = build(RUNTIME)
