"""Issue 34: the deployed monitor follows the runs it started until they end (the cases moto
cannot produce: a run that succeeded, an execution Step Functions no longer knows, a
time-out), through botocore's Stubber speaking the Step Functions API."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import boto3
from botocore.stub import Stubber

from evalrunner.monitor.follow_up import ATTEMPTS, follow_up
from evalrunner.monitor.watermark import InFlightRun, fresh

NOW = datetime(2026, 2, 1, tzinfo=UTC)
MACHINE = "arn:aws:states:us-east-1:123456789012:stateMachine:evalrunner"


def execution(name: str) -> str:
    return f"arn:aws:states:us-east-1:123456789012:execution:evalrunner:{name}"


def described(name: str, status: str, **extra: str) -> dict[str, object]:
    return {
        "executionArn": execution(name),
        "stateMachineArn": MACHINE,
        "status": status,
        "startDate": NOW,
        "input": json.dumps({"key": f"test-suites/_monitor/m/{name}.json", "run_id": name}),
        **extra,
    }


def run(name: str, attempts: int = 1) -> InFlightRun:
    return InFlightRun(
        key=f"test-suites/_monitor/m/{name}.json",
        run_id=name,
        execution_arn=execution(name),
        attempts=attempts,
        interactions=3,
    )


def test_each_run_in_flight_is_kept_dropped_restarted_or_given_up() -> None:
    sfn = boto3.client("stepfunctions", region_name="us-east-1")
    mark = fresh("m", "s3://logs/", 3600).model_copy(
        update={
            "in_flight": [
                run("ok"),
                run("going"),
                run("gone"),
                run("slow"),
                run("dead", attempts=ATTEMPTS),
            ]
        }
    )
    with Stubber(sfn) as stub:
        stub.add_response("describe_execution", described("ok", "SUCCEEDED"))
        stub.add_response("describe_execution", described("going", "RUNNING"))
        stub.add_client_error(
            "describe_execution", "ExecutionDoesNotExist", "Execution Does Not Exist"
        )
        stub.add_response("describe_execution", described("slow", "TIMED_OUT"))
        stub.add_response("start_execution", {"executionArn": execution("again"), "startDate": NOW})
        stub.add_response(
            "describe_execution",
            described("dead", "FAILED", error="States.TaskFailed", cause="mail ann@corp.io"),
        )
        after, done = follow_up(mark, sfn, MACHINE, NOW)
        stub.assert_no_pending_responses()
    assert [(r.key.rsplit("/", 1)[1], r.attempts) for r in after.in_flight] == [
        ("going.json", 1),
        ("slow.json", 2),
    ]
    assert after.in_flight[1].execution_arn == execution("again")
    assert after.in_flight[1].run_id != "slow"
    assert done.retried == ["test-suites/_monitor/m/slow.json"]
    (given_up,) = done.given_up
    assert "dead.json" in given_up and "States.TaskFailed" in given_up
    assert "ann@corp.io" not in given_up  # the cause is masked before it is logged
    (problem,) = done.problems
    assert "gone" in problem and "no longer followed" in problem


def test_a_restart_that_cannot_start_keeps_the_runs_restarted_before_it() -> None:
    """Two failed runs: the first is started again, the second's start is refused (the
    account's open executions are at their limit). The first's new execution must stay
    recorded, else the next schedule starts that suite a third time (scored twice) and the
    execution just started is followed by no one; the second is kept to try again."""
    sfn = boto3.client("stepfunctions", region_name="us-east-1")
    mark = fresh("m", "s3://logs/", 3600).model_copy(
        update={"in_flight": [run("first"), run("second")]}
    )
    with Stubber(sfn) as stub:
        stub.add_response("describe_execution", described("first", "FAILED"))
        stub.add_response("start_execution", {"executionArn": execution("again"), "startDate": NOW})
        stub.add_response("describe_execution", described("second", "FAILED"))
        stub.add_client_error(
            "start_execution", "ExecutionLimitExceeded", "too many open executions"
        )
        after, done = follow_up(mark, sfn, MACHINE, NOW)
        stub.assert_no_pending_responses()
    first, second = after.in_flight
    assert (first.execution_arn, first.attempts) == (execution("again"), 2)
    assert second == run("second")  # as it was: the next schedule tries it again
    assert done.retried == ["test-suites/_monitor/m/first.json"]
    (problem,) = done.problems
    assert "second" in problem and "ExecutionLimitExceeded" in problem


def test_a_run_in_flight_of_another_state_machine_is_never_restarted_on_this_one() -> None:
    """A watermark edited by hand (or left by a deployment whose runner had another name)
    names an execution of another state machine: restarting it would start that machine's
    input, whatever it is, on the runner. It is dropped, named, without being described;
    so is one whose input names another suite than the run it is kept for."""
    sfn = boto3.client("stepfunctions", region_name="us-east-1")
    foreign = run("foreign").model_copy(
        update={"execution_arn": "arn:aws:states:us-east-1:123456789012:execution:payroll:foreign"}
    )
    swapped = run("swapped")
    mark = fresh("m", "s3://logs/", 3600).model_copy(update={"in_flight": [foreign, swapped]})
    elsewhere = json.dumps({"key": "test-suites/payroll.json", "run_id": "x"})
    with Stubber(sfn) as stub:
        stub.add_response("describe_execution", described("swapped", "FAILED", input=elsewhere))
        after, done = follow_up(mark, sfn, MACHINE, NOW)
        stub.assert_no_pending_responses()
    assert after.in_flight == [] and done.retried == [] and done.given_up == []
    first, second = done.problems
    assert "foreign" in first and "another state machine" in first
    assert "swapped" in second and "not the suite" in second


def test_a_run_running_for_over_a_day_is_still_followed_and_said() -> None:
    """An execution that never ends (a scoring job stuck in a queue with no compute) would
    be followed, silently, for up to a year of schedules: past a day it is still followed,
    and each schedule says so, naming it, so an operator looks at it."""
    from datetime import timedelta

    sfn = boto3.client("stepfunctions", region_name="us-east-1")
    mark = fresh("m", "s3://logs/", 3600).model_copy(
        update={"in_flight": [run("stuck"), run("fresh")]}
    )
    with Stubber(sfn) as stub:
        stuck = described("stuck", "RUNNING") | {"startDate": NOW - timedelta(hours=30)}
        stub.add_response("describe_execution", stuck)
        fresh_one = described("fresh", "RUNNING") | {"startDate": NOW - timedelta(hours=2)}
        stub.add_response("describe_execution", fresh_one)
        after, done = follow_up(mark, sfn, MACHINE, NOW)
        stub.assert_no_pending_responses()
    assert [r.run_id for r in after.in_flight] == ["stuck", "fresh"]
    (problem,) = done.problems
    assert "stuck" in problem and "30 h" in problem and "RUNNING" in problem
