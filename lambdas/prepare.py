"""Prepare step. An invalid event or suite raises: the execution fails with the message."""

from typing import Any

from evalrunner.event import read_event
from evalrunner.pipeline.context import Runtime
from evalrunner.pipeline.prepare import prepare_run
from lambdas._common import RUNTIME, Handler, logger, store_for


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
