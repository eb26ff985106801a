"""Scheduled monitor: score what production logged since the last run (see
:mod:`evalrunner.monitor.deployed`). The schedule's event may be empty (the function's
``EVALRUNNER_MONITOR_SOURCE`` names the S3 prefix) or override any of its options::

    {"source": "s3://logs/AWSLogs/…/BedrockModelInvocationLogs/", "sample": "5%",
     "name": "prod-hr", "metrics": ["Faithfulness", "Answer Relevancy"]}
"""

from __future__ import annotations

import os
from datetime import UTC, datetime
from typing import Any

import boto3

from evalrunner.monitor.deployed import ENV_SOURCE, ENV_STATE_MACHINE, MonitorEvent, start_monitor
from evalrunner.monitor.model import MonitorError
from evalrunner.pipeline.context import Runtime
from evalrunner.privacy import masker_from_env
from lambdas._common import RUNTIME, Handler, logger, store_for


def build(runtime: Runtime) -> Handler:
    """The handler over ``runtime``'s bucket and settings (the operator's default judge
    decides whether the judge's referenceless metrics run by default)."""

    @logger.inject_lambda_context
    def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        parsed = MonitorEvent.model_validate(_own_fields(event))  # a bad event fails here
        source = parsed.source or os.environ.get(ENV_SOURCE)
        if not source:
            raise MonitorError(
                f"no source to monitor: set {ENV_SOURCE} on the function or give the event's "
                "'source' (s3://bucket/prefix)"
            )
        store = store_for(None, runtime)
        outcome = start_monitor(
            store,
            boto3.client("stepfunctions", region_name=runtime.settings.region),
            os.environ[ENV_STATE_MACHINE],
            parsed,
            source=source,
            now=datetime.now(UTC),
            s3=store.s3,
            masker=masker_from_env(os.environ),
            with_judge=parsed.judge is not None or runtime.settings.run_defaults.judge is not None,
        )
        logger.info(f"monitor {outcome.status}", extra=outcome.model_dump(exclude={"problems"}))
        for problem in outcome.problems:
            logger.warning("monitor problem", extra={"problem": problem})
        if outcome.given_up:
            # after this run started and the watermark was saved: failing the invocation is
            # what makes the function's errors alarm fire; the next schedule is clean
            raise MonitorError("; ".join(outcome.given_up))
        return outcome.model_dump(mode="json")

    return handler


def _own_fields(event: dict[str, Any]) -> dict[str, Any]:
    """An EventBridge scheduled event carries nothing of ours (its ``detail`` is empty): its
    envelope is dropped; a rule with a constant input passes our fields as they are."""
    if event.get("detail-type") == "Scheduled Event":
        detail = event.get("detail")
        return dict(detail) if isinstance(detail, dict) else {}
    return event


handler = build(RUNTIME)
