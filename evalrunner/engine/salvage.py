"""What a stuck or stopped local run still owes the user: its finished cases saved for a
resume, and reports for them (marked partial), made by the same Score and Aggregate handlers
the state machine calls."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import boto3

from evalrunner.engine.dispatch import Handler
from evalrunner.engine.embedded import BUCKET, REGION, lambda_context
from evalrunner.engine.report_copy import download_set, local_history_notices
from evalrunner.engine.run_types import PIPELINE_FUNCTIONS, Progress, RunResult
from evalrunner.engine.saved_runs import saved_run_dir, write_atomically
from evalrunner.engine.watchdog import Stall
from evalrunner.errors import EngineStalled, PartialRun, ReportsNotWritten, RunStopped
from evalrunner.reports.summary import summary_of_output


def salvage(
    stall: Stall,
    run_ids: list[str],
    progress: Progress,
    out_dir: Path,
    handlers: Mapping[str, Handler],
    read: Callable[[str], bytes],
    *,
    stopped: bool = False,
    execution: tuple[str, str, float] = ("", "", 0.0),
) -> PartialRun:
    """What a stuck or stopped run still owes the user: its finished cases saved for a
    resume, and reports for them (marked partial), made by the same Score and Aggregate
    handlers the machine calls (``read``: an object of the embedded bucket by key).
    ``execution`` is the run's (arn, definition, start time):
    the error carries the partial run as a :class:`RunResult`, so it is reported like any
    other (the verdict line, ``--junit-xml``, ``--markdown``)."""
    kind: type[PartialRun] = RunStopped if stopped else EngineStalled
    if stopped:
        lead = f"the run was stopped ({stall.reason})."
        failure = {"Error": "Engine.Stopped", "Cause": stall.reason}
    else:
        lead = f"the embedded engine stopped making progress: {stall.reason}."
        failure = {"Error": "Engine.Stalled", "Cause": stall.reason}
    if not run_ids:
        return kind(f"{lead} No case had started; nothing was written.")
    run_id = run_ids[-1]
    saved = save_records(run_id, out_dir)
    state: dict[str, Any] = {"run_id": run_id, "bucket": BUCKET, "map_failure": failure}
    files: list[Path] = []
    stalled_in, progress.phase = progress.phase, "salvaging"
    try:
        if stalled_in in ("starting", "cases"):
            try:
                handlers[PIPELINE_FUNCTIONS["ScoreFunctionArn"]](
                    {"run_id": run_id, "bucket": BUCKET}, lambda_context("evalrunner-score")
                )
            except Exception as exc:  # reported by Aggregate as the Score failure
                state["score_failure"] = {"Error": type(exc).__name__, "Cause": str(exc)}
        output = handlers[PIPELINE_FUNCTIONS["AggregateFunctionArn"]](
            {"state": state}, lambda_context("evalrunner-aggregate")
        )
        salvaged = summary_of_output(output, read)
        files = download_set(salvaged, read, out_dir)
        notices = local_history_notices(salvaged.target, out_dir)  # listed as PARTIAL
    except Exception as exc:
        why = exc.message if isinstance(exc, ReportsNotWritten) else f"{exc!r}"
        return kind(
            f"{lead} {saved} finished cases were saved in "
            f"{saved_run_dir(out_dir, run_id)}, but their reports could not be "
            f"written: {why}. To run the rest: repeat the "
            f"command with --resume {run_id}.",
            run_id=run_id,
        )
    where = files[0].parent if files else out_dir
    arn, definition, started = execution
    result = RunResult(
        summary=salvaged,
        execution_arn=arn,
        definition=definition,
        out_dir=out_dir,
        files=files,
        seconds=time.perf_counter() - started if started else 0.0,
        output=output,
        notices=notices,
    )
    return kind(
        f"{lead} {saved} of {progress.total} case runs had finished; their reports are in "
        f"{where} (the others are marked as failed tasks). To run only the rest: repeat "
        f"the same command with --resume {run_id}.",
        run_id=run_id,
        files=files,
        result=result,
    )


def save_records(run_id: str, out_dir: Path) -> int:
    """Every record of the run in the embedded bucket, on disk (most are there already,
    written as their cases finished)."""
    s3 = boto3.client("s3", region_name=REGION)
    folder = saved_run_dir(out_dir, run_id) / "cases"
    folder.mkdir(parents=True, exist_ok=True)
    count = 0
    for page in s3.get_paginator("list_objects_v2").paginate(
        Bucket=BUCKET, Prefix=f"runs/{run_id}/cases/"
    ):
        for obj in page.get("Contents", []):
            body = s3.get_object(Bucket=BUCKET, Key=obj["Key"])["Body"].read()
            write_atomically(folder / obj["Key"].rsplit("/", 1)[-1], body)
            count += 1
    return count
