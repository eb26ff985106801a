"""Runs on the deployed state machine: upload the suite, start, follow, download the reports."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import boto3

from evalrunner.engine.local import _failure_message
from evalrunner.engine.report_copy import download_history, download_set
from evalrunner.engine.run_types import Progress, RunResult
from evalrunner.errors import ExecutionFailed
from evalrunner.pipeline.prepare import new_run_id
from evalrunner.reports.summary import summary_of_output
from evalrunner.storage import RunStore


def start_remote(
    event: dict[str, Any],
    *,
    bucket: str,
    state_machine_arn: str,
    out_dir: Path,
    suite: Path | None = None,
    session: boto3.Session | None = None,
    poll_seconds: float = 2.0,
    on_progress: Callable[[Progress], None] | None = None,
) -> RunResult:
    session = session or boto3.Session()
    started = time.perf_counter()
    store = RunStore(bucket, client=session.client("s3"))
    if suite is not None:
        store.put_bytes(event["key"], suite.read_bytes(), "application/octet-stream")
    event = {**event, "run_id": event.get("run_id") or new_run_id(datetime.now(UTC))}
    sfn = session.client("stepfunctions")
    arn = sfn.start_execution(stateMachineArn=state_machine_arn, input=json.dumps(event))[
        "executionArn"
    ]
    progress = Progress(phase="preparing")
    cases_prefix = f"runs/{event['run_id']}/cases/"
    while True:
        description = sfn.describe_execution(executionArn=arn)
        if on_progress:
            if not progress.total:
                config = store.get_json_or_none(store.run_key(event["run_id"]))
                if config:
                    progress.total, progress.phase = int(config["item_count"]), "cases"
            if progress.total:
                progress.done = len(store.list_keys(cases_prefix))
            on_progress(progress)
        if description["status"] != "RUNNING":
            break
        time.sleep(poll_seconds)
    if description["status"] != "SUCCEEDED":
        raise ExecutionFailed(_failure_message(description))
    output = json.loads(description["output"])
    summary = summary_of_output(output, store.get_bytes)
    files = download_set(summary, store.get_bytes, out_dir)
    notices = download_history(summary.target, store.get_bytes, out_dir)
    return RunResult(
        summary=summary,
        execution_arn=arn,
        definition="",
        out_dir=out_dir,
        files=files,
        seconds=time.perf_counter() - started,
        output=output,
        notices=notices,
    )
