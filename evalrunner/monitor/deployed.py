"""The deployed monitor: the scheduled function reads the source (an S3 prefix), decides what
is new against the watermark in the run bucket, writes the chosen interactions as a suite of
logged answers under ``test-suites/_monitor/<name>/`` (which the upload trigger leaves alone),
starts the deployed state machine on it, and moves the watermark.

The watermark moves when the execution has started, not when it ends: a function cannot wait
out a run. So that a run that then fails loses nothing, each started run is kept in the
watermark and the next schedules follow it (:mod:`evalrunner.monitor.follow_up`): a failed
or timed-out execution's suite is started again, up to three starts, then the invocation
fails naming it. The schedule must not overlap itself: the function runs with a reserved
concurrency of one.
This module knows nothing of Lambda: ``lambdas/monitor.py`` parses the event and calls
:func:`start_monitor`.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from evalrunner.event_rules import MONITOR_SUITE_PREFIX
from evalrunner.monitor.follow_up import FollowUp, execution_name, follow_up
from evalrunner.monitor.metrics import check_metrics, default_metrics
from evalrunner.monitor.model import MonitorError
from evalrunner.monitor.runner import MonitorOptions, commit, plan, suite_rows
from evalrunner.monitor.sampling import parse_sample
from evalrunner.monitor.times import duration_seconds, since_time
from evalrunner.monitor.watermark import BucketWatermarks, InFlightRun
from evalrunner.pipeline.prepare import new_run_id
from evalrunner.privacy import PiiMasker, default_masker
from evalrunner.storage import RunStore
from evalrunner.upload import check_upload

#: The function's settings (infra sets them; an event may override all but the bucket).
ENV_SOURCE = "EVALRUNNER_MONITOR_SOURCE"
ENV_STATE_MACHINE = "EVALRUNNER_STATE_MACHINE_ARN"


class MonitorEvent(BaseModel):
    """What the schedule passes (every field optional: the function's environment names
    the source)."""

    model_config = ConfigDict(extra="forbid")

    source: str | None = None
    name: str | None = None
    format: str = "auto"
    mapping: dict[str, str] = Field(default_factory=dict)
    sample: str | float | int | None = None
    seed: int = 0
    lateness: str = "1h"
    since: str | None = None
    metrics: list[str] | None = None
    judge: dict[str, Any] | str | None = None
    #: ``false`` where the deployment turned masking off (cdk.json ``monitor.pii.enabled``;
    #: the schedule passes it); it cannot turn off what the deployment masks. ``true``
    #: masks with the default options even where the deployment does not.
    mask_pii: bool | None = None

    def masker(self, deployed: PiiMasker | None) -> PiiMasker | None:
        """The masking this run uses: the deployment's (``EVALRUNNER_MONITOR_PII``), which
        an event may tighten but never loosen."""
        if self.mask_pii is False and deployed is not None:
            raise MonitorError(
                "mask_pii: false, but the deployment masks PII (EVALRUNNER_MONITOR_PII); an "
                "event cannot turn masking off: set cdk.json monitor.pii.enabled to false"
            )
        if self.mask_pii and deployed is None:
            return default_masker()
        return deployed

    def options(self, source: str, now: datetime) -> MonitorOptions:
        return MonitorOptions(
            source=source,
            format=self.format,
            mapping=self.mapping,
            name=self.name,
            since=since_time(self.since, now) if self.since else None,
            sample=parse_sample(str(self.sample)) if self.sample is not None else None,
            seed=self.seed,
            lateness_seconds=duration_seconds(self.lateness, "lateness"),
        )


class MonitorStart(BaseModel):
    """What one scheduled monitor did (the function's reply and log line)."""

    model_config = ConfigDict(extra="forbid")

    status: Literal["started", "nothing_new"]
    monitor: str
    found: int
    new: int
    scored: int
    duplicates: int
    too_late: int
    #: incomplete traces left for a later run (their root span not read yet)
    pending: int = 0
    problems: list[str]
    run_id: str | None = None
    key: str | None = None
    execution_arn: str | None = None
    #: suites of earlier runs that failed or timed out, started again by this invocation
    retried: list[str] = Field(default_factory=list)
    #: runs given up after their last attempt failed (the handler then fails the invocation)
    given_up: list[str] = Field(default_factory=list)
    #: runs started and not yet seen to succeed (this one included)
    in_flight: int = 0


def start_monitor(
    store: RunStore,
    sfn: Any,
    state_machine_arn: str,
    event: MonitorEvent,
    *,
    source: str,
    now: datetime,
    s3: Any = None,
    masker: PiiMasker | None,
    with_judge: bool = False,
) -> MonitorStart:
    """Plan, write the suite, start the execution, move the watermark. ``masker``: the
    deployment's PII masking (cdk.json ``monitor.pii``, :func:`evalrunner.privacy.
    masker_from_env`; None: turned off there). An event cannot turn it off
    (:meth:`MonitorEvent.masker`): who may invoke the function need not be who decides what
    a judge sees."""
    options = event.options(source, now)
    chosen_masker = event.masker(masker)  # refused before anything is read or written
    options.check()
    watermarks = BucketWatermarks(store)
    followed = FollowUp()
    earlier = watermarks.load(options.monitor_name())
    if earlier is not None and earlier.in_flight:
        # the runs started before: a failed one is started again (its interactions are past
        # the watermark), before this run's plan reads the watermark
        looked, followed = follow_up(
            earlier, sfn, state_machine_arn, now, lambda key: _suite_there(store, key)
        )
        if looked != earlier:
            watermarks.save(looked)
    found = plan(options, watermarks, s3=s3 or store.s3, now=now, masker=chosen_masker)
    counts: dict[str, Any] = {
        "monitor": found.name,
        "found": found.found,
        "new": len(found.new),
        "scored": len(found.chosen),
        "duplicates": found.duplicates,
        "too_late": found.too_late,
        "pending": found.pending,
        "problems": [*followed.problems, *(p.text() for p in found.problems)][:50],
        "retried": followed.retried,
        "given_up": followed.given_up,
    }
    if not found.chosen:
        moved = commit(found, watermarks, None, now)
        return MonitorStart(status="nothing_new", in_flight=len(moved.in_flight), **counts)
    run_id = new_run_id(now)
    key = f"{MONITOR_SUITE_PREFIX}{found.name}/{run_id}.json"
    rows = suite_rows(found.chosen, mask_pii=chosen_masker if chosen_masker is not None else False)
    # escaped: a lone surrogate from a log reaches the suite reader (which replaces it)
    store.put_bytes(key, json.dumps(rows).encode("ascii"), "application/json")
    metrics = (
        check_metrics(event.metrics) if event.metrics else default_metrics(with_judge=with_judge)
    )
    run_event: dict[str, Any] = {
        "key": key,
        "iterations": 1,
        "target": {"logged": found.name},
        "metrics": metrics,
        "run_id": run_id,
    }
    if event.judge is not None:
        run_event["judge"] = event.judge
    check_upload(store, key, run_event)
    arn = sfn.start_execution(
        stateMachineArn=state_machine_arn,
        name=execution_name(found.name, run_id),
        input=json.dumps(run_event),
    )["executionArn"]
    started = InFlightRun(key=key, run_id=run_id, execution_arn=arn, interactions=len(rows))
    mark = found.watermark
    found = found.model_copy(
        update={"watermark": mark.model_copy(update={"in_flight": [*mark.in_flight, started]})}
    )
    moved = commit(found, watermarks, run_id, now)
    return MonitorStart(
        status="started",
        run_id=run_id,
        key=key,
        execution_arn=arn,
        in_flight=len(moved.in_flight),
        **counts,
    )


def _suite_there(store: RunStore, key: str) -> bool:
    """Whether a failed run's suite is still in the bucket (only a missing object says no:
    any other failure lets the restart go ahead and say what is wrong)."""
    from botocore.exceptions import ClientError

    try:
        store.s3.head_object(Bucket=store.bucket, Key=key)
    except ClientError as exc:
        code = str(exc.response.get("Error", {}).get("Code"))
        return code not in ("404", "NoSuchKey", "NotFound")
    return True
