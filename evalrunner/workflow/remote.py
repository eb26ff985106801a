"""``evalrunner workflow --event FILE --aws``: the deployed workflow from a laptop, as
``evalrunner start --aws`` is for a run. The event's inputs found under the event file's
folder (the same layout a local ``--event`` reads) are uploaded to their keys, the workflow
state machine is started with the event, followed until it ends, and the workflow's folder
(``workflows/<id>/`` in the bucket) is copied into ``--out``."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import boto3

from evalrunner.errors import ExecutionFailed
from evalrunner.storage import RunStore
from evalrunner.workflow.event import WorkflowEvent, parse_workflow_event


@dataclass
class RemoteWorkflow:
    """A finished deployed workflow: its execution, output and the files copied out."""

    execution_arn: str
    output: dict[str, Any]
    files: list[Path]
    uploaded: list[str]


def start_workflow_remote(
    raw: dict[str, Any],
    *,
    root: Path,
    bucket: str,
    state_machine_arn: str,
    out_dir: Path,
    session: boto3.Session | None = None,
    poll_seconds: float = 2.0,
) -> RemoteWorkflow:
    """Upload the inputs under ``root``, start the workflow, wait, copy its folder out. A
    failed execution raises :class:`ExecutionFailed` with its cause (the folder is copied
    first: its report says which step failed)."""
    event = parse_workflow_event(raw)
    session = session or boto3.Session()
    store = RunStore(bucket, client=session.client("s3"))
    uploaded = _upload_inputs(event, root, store)
    sfn = session.client("stepfunctions")
    arn = str(
        sfn.start_execution(
            stateMachineArn=state_machine_arn, input=json.dumps(raw, ensure_ascii=False)
        )["executionArn"]
    )
    while True:
        found = sfn.describe_execution(executionArn=arn)
        if found["status"] != "RUNNING" and (found["status"] != "SUCCEEDED" or "output" in found):
            break
        time.sleep(poll_seconds)
    files = _download(store, WorkflowEvent.folder_prefix(event.workflow_id), out_dir)
    if found["status"] != "SUCCEEDED":
        cause = str(found.get("cause") or found.get("error") or found["status"])
        try:
            cause = str(json.loads(cause).get("errorMessage", cause))
        except (ValueError, AttributeError):
            pass
        raise ExecutionFailed(
            f"the workflow execution {arn} ended {found['status']}: {cause}; start it again "
            "with the same workflow_id to resume"
        )
    return RemoteWorkflow(arn, json.loads(found["output"]), files, uploaded)


def _upload_inputs(event: WorkflowEvent, root: Path, store: RunStore) -> list[str]:
    """The event's documents, suite and labels that exist under ``root``, put at their keys
    (those not there locally are expected in the bucket already)."""
    uploaded: list[str] = []
    if event.documents and (root / event.documents).is_dir():
        folder = root / event.documents
        for path in sorted(p for p in folder.rglob("*") if p.is_file()):
            key = event.documents + path.relative_to(folder).as_posix()
            store.put_bytes(key, path.read_bytes(), "application/octet-stream", redact=False)
            uploaded.append(key)
    for name in (event.suite, event.labels):
        if name and (root / name).is_file():
            data = (root / name).read_bytes()
            store.put_bytes(name, data, "application/octet-stream", redact=False)
            uploaded.append(name)
    return uploaded


def _download(store: RunStore, prefix: str, out_dir: Path) -> list[Path]:
    from evalrunner.workflow.deployed import EVENT_NAME, LOCK_NAME
    from evalrunner.workflow.guards import write_under

    files = []
    for key in store.list_keys(prefix):
        rel = key[len(prefix) :]
        if rel and not rel.endswith("/") and rel not in (EVENT_NAME, LOCK_NAME):
            files.append(write_under(out_dir, rel, store.get_bytes(key)))
    return files
