"""Aggregate step: its return value is the execution's output (the run summary, fitted to
Step Functions' output limit)."""

from typing import Any

import boto3

from evalrunner.notify import publish_summary
from evalrunner.pipeline.aggregate import aggregate_run
from evalrunner.pipeline.context import Runtime
from evalrunner.reports.summary import fit_output
from evalrunner.run import AggregateEvent
from evalrunner.signals.publish import RunSignals, run_signals
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
        settings = runtime.settings
        topic = settings.topic_arn
        signals = RunSignals()
        try:  # a monitor run's series and worst interactions (evalrunner.signals)
            signals = run_signals(
                summary,
                store_for(state.bucket, runtime),
                settings.signals,
                cloudwatch=lambda: boto3.client("cloudwatch", region_name=settings.region),
                notify=bool(topic),
            )
        except Exception:  # like the notification, never worth the run's output
            logger.exception("could not publish the run's signals", extra={"run_id": state.run_id})
        if topic:
            try:
                publish_summary(
                    topic, summary, worst=signals.worst, text_chars=settings.signals.text_chars
                )
            except Exception:  # a notification must never cost the run its output
                logger.exception("could not publish the run summary", extra={"topic": topic})
        return fit_output(summary)

    return handler


# Aggregate builds the report rows, objects that live to its end: full collections walked
# them and every imported library for nothing (issue 18), so the deployed handler runs frozen.
handler = collector_frozen(build(RUNTIME))
