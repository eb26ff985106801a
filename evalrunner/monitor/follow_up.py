"""The deployed monitor's runs followed until they end, so a failed one loses nothing.

The scheduled function moves the watermark when it *starts* an execution (a function cannot
wait out a run), so a run that then fails or times out would leave its interactions past the
watermark and never scored. Each started run is therefore kept in the watermark
(:class:`~evalrunner.monitor.watermark.InFlightRun`) and looked at by the next schedules:

- RUNNING: left alone (past :data:`STILL_RUNNING_AFTER`, each schedule says so with a
  problem line, so a run that never ends does not go unseen); SUCCEEDED: done, dropped;
- FAILED or TIMED_OUT: its suite (already written, already masked) is started again as a
  new run, up to :data:`ATTEMPTS` starts in all; after the last one fails the monitor gives
  up on it: the entry is dropped and the invocation fails naming the run, its suite and the
  last error, so the function's errors alarm fires once (and the next schedule is clean);
- FAILED or TIMED_OUT with its suite no longer there (deleted by hand, or by a retention
  rule): given up at once, saying so (a restart could only fail in Prepare);
- ABORTED: a person stopped it, so it is not restarted; a problem line says so;
- an execution Step Functions no longer knows, one of another state machine (a watermark
  edited by hand, a runner renamed), or one whose input is not the suite it is kept for:
  dropped, with a problem line (never started on this state machine);
- a restart Step Functions refuses (throttled, too many open executions): kept as it was,
  with a problem line, so the next schedule tries it again and the runs restarted before
  it stay recorded.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from evalrunner.monitor.watermark import InFlightRun, Watermark
from evalrunner.pipeline.prepare import new_run_id

#: Starts of one monitor run in all (the first and two restarts) before it is given up.
ATTEMPTS = 3
_RESTARTED = ("FAILED", "TIMED_OUT")
_GOING = ("RUNNING", "PENDING_REDRIVE")
#: How long a run may go on before each schedule says so (it is still followed).
STILL_RUNNING_AFTER = timedelta(days=1)
#: The longest execution name Step Functions takes.
_NAME_CHARS = 80
#: The most characters of a failed execution's cause quoted in a message.
_CAUSE_CHARS = 300


class FollowUp(BaseModel):
    """What looking at the runs in flight did."""

    model_config = ConfigDict(extra="forbid")

    #: suite keys started again
    retried: list[str] = Field(default_factory=list)
    #: one message per run given up (its last attempt failed)
    given_up: list[str] = Field(default_factory=list)
    problems: list[str] = Field(default_factory=list)


def execution_name(monitor: str, run_id: str) -> str:
    """An execution name for ``run_id`` (unique: the run id is), within Step Functions' 80
    characters: the monitor's name (up to 128) is cut to leave room for the run id."""
    return f"{monitor[: _NAME_CHARS - 1 - len(run_id)]}-{run_id}"


def follow_up(
    watermark: Watermark,
    sfn: Any,
    state_machine_arn: str,
    now: datetime,
    suite_exists: Callable[[str], bool] | None = None,
) -> tuple[Watermark, FollowUp]:
    """``watermark`` with its runs in flight looked at (restarted, dropped or kept), and
    what was done. ``suite_exists(key)``: whether a failed run's suite is still there to be
    started again (None: not asked)."""
    from botocore.exceptions import BotoCoreError, ClientError

    done = FollowUp()
    kept: list[InFlightRun] = []
    executions = state_machine_arn.replace(":stateMachine:", ":execution:", 1) + ":"
    for run in watermark.in_flight:
        if not run.execution_arn.startswith(executions):
            # (a watermark edited by hand, or a runner since renamed): its input, whatever
            # it is, must not be started on this state machine
            done.problems.append(
                f"run {run.run_id} of {run.key}: its execution {run.execution_arn} belongs to "
                "another state machine; no longer followed (start its suite again to score it)"
            )
            continue
        try:
            described = sfn.describe_execution(executionArn=run.execution_arn)
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") == "ExecutionDoesNotExist":
                done.problems.append(
                    f"run {run.run_id} of {run.key}: Step Functions no longer knows its "
                    "execution; no longer followed"
                )
                continue
            kept.append(run)
            done.problems.append(f"run {run.run_id} of {run.key}: not looked at ({exc})")
            continue
        except BotoCoreError as exc:
            kept.append(run)
            done.problems.append(f"run {run.run_id} of {run.key}: not looked at ({exc})")
            continue
        status = str(described.get("status"))
        if status in _GOING:
            kept.append(run)
            started = described.get("startDate")
            if isinstance(started, datetime) and now - started > STILL_RUNNING_AFTER:
                hours = (now - started).total_seconds() / 3600
                done.problems.append(
                    f"run {run.run_id} of {run.key} is still {status} after {hours:.0f} h "
                    f"({run.execution_arn}): look at it in Step Functions; stop it to let "
                    "the monitor drop it"
                )
        elif status == "ABORTED":
            done.problems.append(
                f"run {run.run_id} of {run.key} was stopped by hand (ABORTED): not restarted, "
                "its interactions are not scored; start the suite again to score them"
            )
        elif status in _RESTARTED and (run.attempts >= ATTEMPTS or not described.get("input")):
            # (an execution whose input Step Functions did not return cannot be restarted)
            done.given_up.append(_given_up(run, status, described))
        elif status in _RESTARTED and _suite_of(described) != run.key:
            done.problems.append(
                f"run {run.run_id} of {run.key}: its execution's input is not the suite it "
                "is followed for; not restarted, no longer followed"
            )
        elif status in _RESTARTED and suite_exists is not None and not suite_exists(run.key):
            # (deleted by hand, or by a retention rule): a restart could only fail again
            done.given_up.append(
                f"gave up on the monitor run of {run.key} ({run.interactions} "
                f"interaction(s)): its run {run.run_id} ended {status} and its suite is no "
                "longer there, so it cannot be started again; its interactions are not scored"
            )
        elif status in _RESTARTED:
            try:
                kept.append(_restart(run, described, sfn, state_machine_arn, watermark.name, now))
            except (ClientError, BotoCoreError) as exc:
                # the runs restarted before this one stay recorded; this one is tried again
                kept.append(run)
                done.problems.append(f"run {run.run_id} of {run.key}: not restarted ({exc})")
                continue
            done.retried.append(run.key)
        # SUCCEEDED: done
    return watermark.model_copy(update={"in_flight": kept}), done


def _suite_of(described: dict[str, Any]) -> object:
    """The suite key a described execution's input names (None: not a run's event)."""
    try:
        event = json.loads(described["input"])
    except (KeyError, TypeError, ValueError):
        return None
    return event.get("key") if isinstance(event, dict) else None


def _restart(
    run: InFlightRun,
    described: dict[str, Any],
    sfn: Any,
    state_machine_arn: str,
    monitor: str,
    now: datetime,
) -> InFlightRun:
    """The same suite started again as a new run (its own run id, so the failed attempt's
    partial files stay apart)."""
    event = json.loads(described["input"])
    run_id = new_run_id(now)
    event["run_id"] = run_id
    arn = sfn.start_execution(
        stateMachineArn=state_machine_arn,
        name=execution_name(monitor, run_id),
        input=json.dumps(event),
    )["executionArn"]
    return run.model_copy(
        update={"run_id": run_id, "execution_arn": arn, "attempts": run.attempts + 1}
    )


def _given_up(run: InFlightRun, status: str, described: dict[str, Any]) -> str:
    from evalrunner.privacy import mask_pii

    error = str(described.get("error") or "no error given")
    cause = mask_pii(str(described.get("cause") or ""))
    if len(cause) > _CAUSE_CHARS:
        cause = cause[:_CAUSE_CHARS] + " …"
    return (
        f"gave up on the monitor run of {run.key} ({run.interactions} interaction(s)) after "
        f"{run.attempts} attempt(s): the last, run {run.run_id}, ended {status} ({error}"
        + (f": {cause}" if cause else "")
        + "); its interactions are not scored: fix the cause, then start that suite again "
        "(the failed execution's input as the event: evalrunner start --aws --event FILE)"
    )
