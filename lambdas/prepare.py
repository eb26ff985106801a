"""Prepare step. An invalid event or suite raises: the execution fails with the message."""

import time
from typing import Any

from evalrunner.event import read_event
from evalrunner.pipeline.context import Runtime
from evalrunner.pipeline.prepare import prepare_run
from lambdas._common import RUNTIME, Handler, logger, store_for

#: Seconds of the function's time kept, after the red team's attack writing, for the rest
#: of Prepare (the suite, the manifest, the estimate, storing them) and starting the Map.
MARGIN_SECONDS = 60.0


def build(runtime: Runtime) -> Handler:
    """Prepare reads no run context (it writes the run's configuration); it takes from
    ``runtime`` the judge, for the perturbations the judge applies (misinformation), and its
    settings (the operator's defaults, the concurrency cap, the suite limits)."""

    @logger.inject_lambda_context
    def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        # parsed at the door (a bad event fails here), with the operator's defaults as the
        # runtime's settings read them when the container started
        spec = read_event(event["event"], defaults=runtime.settings.run_defaults)
        store = store_for(None, runtime)
        # Lambda's limit (locally: none unless --function-timeout) as a plain deadline
        left = context.get_remaining_time_in_millis() / 1000 - MARGIN_SECONDS
        output = prepare_run(
            spec,
            store,
            make_judge=lambda judge: runtime.judge_for(judge, store),
            settings=runtime.settings,
            deadline=time.monotonic() + left,
        )
        logger.info("run prepared", extra={"run_id": output.run_id, "items": output.item_count})
        return output.model_dump(mode="json")

    return handler


handler = build(RUNTIME)
