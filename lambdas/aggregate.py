"""Aggregate step: its return value is the execution's output (the run summary, fitted to
Step Functions' output limit)."""

from typing import Any

from evalrunner.notify import publish_summary
from evalrunner.pipeline.aggregate import aggregate_run
from evalrunner.pipeline.context import Runtime
from evalrunner.reports.summary import fit_output
from evalrunner.run import AggregateEvent
from lambdas._common import (
    RUNTIME,
    Handler,
    collector_frozen,
    emit_run_metrics,
    logger,
    store_for,
)


def build(runtime: Runtime) -> Handler:
    @logger.inject_lambda_context
    def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        state = AggregateEvent.model_validate(event).state
        summary = aggregate_run(
            runtime.context(store_for(state.bucket, runtime), state.run_id), state
        )
        gates = [g.model_dump(mode="json") for g in summary.gates]
        logger.info("run aggregated", extra={"run_id": state.run_id, "gates": gates})
        emit_run_metrics(summary)
        topic = runtime.settings.topic_arn
        if topic:
            try:
                publish_summary(topic, summary)
            except Exception:  # a notification must never cost the run its output
                logger.exception("could not publish the run summary", extra={"topic": topic})
        return fit_output(summary)

    return handler


# Aggregate builds the report rows, objects that live to its end: full collections walked
# them and every imported library for nothing (issue 18), so the deployed handler runs frozen.
handler = collector_frozen(build(RUNTIME))
