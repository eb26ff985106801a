"""Upload trigger: an S3 "Object Created" event (via EventBridge) for a suite under
test-suites/ starts a run, or writes test-reports/_rejected/<name>.json with the reasons.

Also accepts a classic S3 notification (``Records``) and a direct ``{"bucket", "key"}`` call,
which is how a rejected upload is retried by hand without uploading it again.
"""

from __future__ import annotations

import os
from typing import Any

import boto3

from evalrunner.storage import RunStore
from evalrunner.upload import UploadDefaults, start_from_upload
from lambdas._common import logger, store_for


def uploads(event: dict[str, Any]) -> list[tuple[str | None, str, str | None]]:
    """(bucket, key, idempotency token) for each object the event reports."""
    if "detail" in event:  # EventBridge: S3 Object Created
        detail = event["detail"]
        return [(detail["bucket"]["name"], detail["object"]["key"], event.get("id"))]
    if "Records" in event:  # S3 event notification
        return [
            (
                r["s3"]["bucket"]["name"],
                r["s3"]["object"]["key"],
                r["s3"]["object"].get("sequencer"),
            )
            for r in event["Records"]
        ]
    return [(event.get("bucket"), event["key"], event.get("token"))]


@logger.inject_lambda_context
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    state_machine_arn = os.environ["EVALRUNNER_STATE_MACHINE_ARN"]
    defaults = UploadDefaults.from_env()
    sfn = boto3.client("stepfunctions")
    outcomes = []
    for bucket, key, token in uploads(event):
        store: RunStore = store_for(bucket)
        outcome = start_from_upload(store, sfn, state_machine_arn, key, defaults, token=token)
        logger.info(
            f"upload {outcome.status}",
            extra={
                "key": outcome.key,
                "execution": outcome.execution_arn,
                "reasons": outcome.reasons,
            },
        )
        outcomes.append(outcome.as_dict())
    return outcomes[0] if len(outcomes) == 1 else {"uploads": outcomes}
