"""The lock of a deployed workflow (``workflows/<id>/lock.json``, used by
:mod:`evalrunner.workflow.deployed`): the one execution working on a workflow, taken over
only from one that has ended."""

from __future__ import annotations

import json
from collections.abc import Callable

from botocore.exceptions import ClientError

from evalrunner.errors import EventError
from evalrunner.storage import RunStore


def hold(
    store: RunStore, key: str, workflow_id: str, execution: str, running: Callable[[str], bool]
) -> None:
    """``workflows/<id>/lock.json`` names the execution working on the workflow: a second
    execution of the same id while that one runs is refused (two would start the same
    runs and overwrite each other's manifest); one that ended (done, failed, stopped)
    leaves it to the next. Taking it over is conditional on the lock read (S3's
    ``If-Match``), so of two starts racing for an ended one's lock only one wins; the
    other reads the winner's and is refused."""
    mine = json.dumps({"execution": execution}).encode("utf-8")
    for _ in range(5):
        if store.put_if_absent(key, mine, "application/json"):
            return
        found = _read(store, key)
        if found is None:  # deleted between the two calls: create it again
            continue
        held, etag = found
        if held == execution:  # this execution's Begin retried
            return
        if held and running(held):
            raise EventError(
                f"workflow_id: {workflow_id!r} is being worked on by the execution {held}; "
                "wait for it to end (or stop it), then start this one again, or give "
                "another workflow_id"
            )
        if _replace(store, key, mine, etag):
            return
    raise EventError(
        f"workflow_id: {workflow_id!r}: other executions keep taking it over; start this "
        "one again once they have ended, or give another workflow_id"
    )


def _read(store: RunStore, key: str) -> tuple[str | None, str] | None:
    """The lock's execution (None when unreadable: taken over) and its ETag; None when
    there is no lock."""
    try:
        got = store.s3.get_object(Bucket=store.bucket, Key=key)
    except ClientError as exc:
        if exc.response.get("Error", {}).get("Code") in ("NoSuchKey", "404"):
            return None
        raise
    try:
        held = json.loads(got["Body"].read()).get("execution")
    except (ValueError, AttributeError):
        held = None
    return (str(held) if held else None), str(got["ETag"])


def _replace(store: RunStore, key: str, data: bytes, etag: str) -> bool:
    """Overwrite ``key`` only if it is still the object read (``etag``); False when
    another write came first."""
    try:
        store.s3.put_object(
            Bucket=store.bucket,
            Key=key,
            Body=data,
            ContentType="application/json",
            IfMatch=etag,
        )
    except ClientError as exc:
        code = exc.response.get("Error", {}).get("Code", "")
        status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
        if code in ("PreconditionFailed", "ConditionalRequestConflict", "NoSuchKey") or (
            status in (404, 409, 412)
        ):
            return False
        raise
    return True
