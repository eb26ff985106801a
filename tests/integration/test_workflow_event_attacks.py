"""The deployed workflow under an operator's and an attacker's hands: a step whose Lambda is
killed by its timeout or breaks on a bug is recorded as failed with why (the report and the
next start say so); a tampered ``workflow.json`` in the bucket is refused, never followed
outside the workflow's folder. The bucket and both state machines are moto's
(:mod:`tests.support.deployed_workflow`); the tasks are :class:`Deployed`'s own."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import boto3
import pytest

from evalrunner.engine.embedded import BUCKET, REGION
from evalrunner.errors import ConfigError, EvalRunnerError
from evalrunner.judge.base import Judge
from evalrunner.storage import RunStore
from evalrunner.workflow.config import Step
from evalrunner.workflow.deployed import Deployed
from tests.support.deployed_workflow import RUN_MACHINE, Stack, deployed_stack
from tests.support.workflow import COUNTS, DOCUMENTS

PREFIX = "workflows/wf-a/"


class Killed(BaseException):
    """The Lambda runtime ending the invocation (its timeout): nothing after it runs."""


def event(**more: Any) -> dict[str, Any]:
    return {
        "workflow_id": "wf-a",
        "target": {"openai": {"base_url": "http://127.0.0.1:9/v1", "model": "m"}},
        "judge": {"openai": {"base_url": "http://127.0.0.1:9/v1", "model": "j"}},
        "documents": "workflow-inputs/hr/docs/",
        "counts": COUNTS,
        "fail_on": "never",
        **more,
    }


def deployed(stack: Stack, writer: Any = None) -> Deployed:
    store = RunStore(BUCKET, client=boto3.client("s3", region_name=REGION))
    return Deployed(store=store, sfn=stack.sfn, run_machine=RUN_MACHINE, writer=writer)


def begun(stack: Stack) -> None:
    for name, text in DOCUMENTS.items():
        stack.put(f"workflow-inputs/hr/docs/{name}", text)
    deployed(stack).begin(event())


def record(stack: Stack, step: str) -> dict[str, Any]:
    steps = {s["step"]: s for s in stack.json(PREFIX + "workflow.json")["steps"]}
    return dict(steps[step])


def test_a_step_killed_by_the_lambda_timeout_is_recorded_failed_by_the_failure_report() -> None:
    def killed(raw: Mapping[str, Any]) -> Judge:
        raise Killed

    with deployed_stack() as stack:
        begun(stack)
        with pytest.raises(Killed):
            deployed(stack, killed).step("wf-a", Step.GENERATE)
        # what the state machine's failure branch passes after the retries
        error = {
            "Error": "Sandbox.Timedout",
            "Cause": json.dumps({"errorMessage": "Task timed out after 900.00 seconds"}),
        }
        out = deployed(stack).report("wf-a", error)
        generate = record(stack, "generate")
        assert generate["status"] == "failed"
        assert "Task timed out after 900.00 seconds" in generate["error"]
        assert out["steps"]["generate"] == "failed" and out["verdict"] == "incomplete"
        html = stack.get(PREFIX + "workflow-report.html").decode("utf-8")
        assert "Task timed out after 900.00 seconds" in html
        # the steps it never reached stay as they were
        assert record(stack, "evaluate")["status"] == "pending"
        assert record(stack, "evaluate")["started_at"] is None


def test_a_bug_in_a_step_is_recorded_as_its_error() -> None:
    def broken(raw: Mapping[str, Any]) -> Judge:
        raise KeyError("choices")

    with deployed_stack() as stack:
        begun(stack)
        with pytest.raises(KeyError):
            deployed(stack, broken).step("wf-a", Step.GENERATE)
        generate = record(stack, "generate")
        assert generate["status"] == "failed"
        assert "KeyError" in generate["error"] and "choices" in generate["error"]
        deployed(stack).report("wf-a", {"Error": "KeyError", "Cause": "{}"})
        report = stack.json(PREFIX + "workflow-report.json")
        assert "KeyError" in report["steps"][0]["error"]


def test_a_run_step_failing_before_its_run_starts_is_recorded_failed() -> None:
    """A run step's task writes its suite (the red team's: the judge writes the attacks)
    before it starts the run: a failure there is the step's recorded error, and its record
    is started first, so a timeout there is recorded by the failure report too."""
    from evalrunner.workflow import runner

    with deployed_stack() as stack:
        begun(stack)
        work = deployed(stack)
        _, ctx = work._open("wf-a")
        digest = runner.inputs_digest(ctx, Step.EVALUATE)
        # evaluate's inputs: no finished generate step, so the event's suite is missing
        with pytest.raises(EvalRunnerError):
            work.step("wf-a", Step.EVALUATE)
        evaluate = record(stack, "evaluate")
        assert evaluate["status"] == "failed" and evaluate["inputs_digest"] == digest
        assert "suite" in evaluate["error"]
        assert stack.runs() == []


def test_a_tampered_manifest_pointing_outside_the_workflow_is_refused_not_uploaded(
    tmp_path: Any,
) -> None:
    """Someone with write access to workflows/ marks generate done with its suite elsewhere
    (a file of the function's machine, or another workflow's folder): the evaluate step must
    not read it and upload it as its run's suite; the refusal names the bucket's key."""
    secret = tmp_path / "secret.csv"
    secret.write_text("question\nAWS_SECRET_ACCESS_KEY=not-for-the-bucket\n")
    with deployed_stack() as stack:
        begun(stack)
        manifest = {"version": 1, "steps": [{"step": s.value} for s in Step]}
        manifest["steps"][0].update(status="done", outputs={"suite": str(secret)})
        stack.put(PREFIX + "workflow.json", json.dumps(manifest))
        with pytest.raises(ConfigError) as caught:
            deployed(stack).step("wf-a", Step.EVALUATE)
        assert f"s3://{BUCKET}/{PREFIX}workflow.json" in caught.value.message
        assert "not a path inside the workflow folder" in caught.value.message
        assert "another workflow_id" in caught.value.message
        assert stack.keys("test-suites/_workflow/") == []
        assert stack.runs() == []


WAITING = json.dumps(
    {"StartAt": "W", "States": {"W": {"Type": "Wait", "Seconds": 600, "End": True}}}
)


def test_two_starts_racing_for_an_ended_execution_s_lock_only_one_wins() -> None:
    """The lock names an execution that has ended; two new executions of the same id read it
    at the same moment: only one may take it over (else both start the same runs and
    overwrite each other's manifest). The second's write lands between the first's read and
    its own write, through the S3 client's own event hooks."""
    with deployed_stack() as stack:
        begun(stack)
        # the lock names an execution that ended long ago (its history is gone)
        ended = "arn:aws:states:us-east-1:123456789012:execution:evalrunner-workflow:ended"
        stack.put(PREFIX + "lock.json", json.dumps({"execution": ended}))
        machine = stack.sfn.create_state_machine(
            name="waiting", definition=WAITING, roleArn="arn:aws:iam::123456789012:role/r"
        )["stateMachineArn"]
        first, second = (
            stack.sfn.start_execution(stateMachineArn=machine, name=n)["executionArn"]
            for n in ("first", "second")
        )
        store = deployed(stack).store
        raced: list[str] = []

        def race(params: dict[str, Any], **_: Any) -> None:
            # the first start is about to overwrite the ended execution's lock: the second
            # start takes it just before
            if params["Key"].endswith("lock.json") and "IfNoneMatch" not in params and not raced:
                raced.append("second")
                deployed(stack).begin(event(), second)

        store.s3.meta.events.register("before-parameter-build.s3.PutObject", race)
        try:
            with pytest.raises(EvalRunnerError) as caught:
                Deployed(store=store, sfn=stack.sfn, run_machine=RUN_MACHINE).begin(event(), first)
        finally:
            store.s3.meta.events.unregister("before-parameter-build.s3.PutObject", race)
            for arn in (first, second):
                stack.sfn.stop_execution(executionArn=arn)
        assert raced == ["second"]
        assert "is being worked on by the execution" in caught.value.message
        assert second in caught.value.message
        assert stack.json(PREFIX + "lock.json") == {"execution": second}


# a name this workflow's evaluate step gives its runs (workflow/guards.py's run_name)
GONE = f"{RUN_MACHINE.replace(':stateMachine:', ':execution:')}:wf-a-evaluate-00000000dead"


def suite_begun(stack: Stack) -> Deployed:
    stack.put("workflow-inputs/hr/suite.csv", "id,question\nq1,How many days of leave?\n")
    work = deployed(stack)
    work.begin(event(documents=None, suite="workflow-inputs/hr/suite.csv"))
    return work


def pending_run(stack: Stack, work: Deployed) -> None:
    """evaluate's record: its run started with these inputs, an execution no longer there."""
    from evalrunner.workflow import runner

    _, ctx = work._open("wf-a")
    digest = runner.inputs_digest(ctx, Step.EVALUATE)
    manifest = json.loads(ctx.manifest.model_dump_json())
    manifest["steps"][1].update(
        started_at="2026-01-01T00:00:00+00:00", inputs_digest=digest, facts={"execution": GONE}
    )
    stack.put(PREFIX + "workflow.json", json.dumps(manifest))


def test_a_run_gone_from_step_functions_fails_its_check_and_the_next_start_runs_it_again() -> None:
    """A run step's run that no longer exists (Step Functions keeps 90 days of history; a
    workflow resumed later) must not wedge the workflow on ExecutionDoesNotExist."""
    with deployed_stack() as stack:
        work = suite_begun(stack)
        pending_run(stack, work)
        with pytest.raises(EvalRunnerError, match="no longer exists"):
            work.check("wf-a", Step.EVALUATE)
        evaluate = record(stack, "evaluate")
        assert evaluate["status"] == "failed" and GONE in evaluate["error"]

        pending_run(stack, work)  # the record as a stopped execution left it
        state = work.step("wf-a", Step.EVALUATE)
        assert state["status"] == "running" and state["execution"] != GONE
        assert [r["executionArn"] for r in stack.runs()] == [state["execution"]]


def test_the_check_task_while_the_run_runs_is_one_describe_call_not_a_copy() -> None:
    """The state machine's check passes the run it follows: while that run runs, the task
    answers from one DescribeExecution call and reads nothing of the workflow (here its
    stored event is gone, so any read of the workflow would fail)."""
    from types import SimpleNamespace

    from evalrunner.pipeline.context import Runtime, Settings
    from lambdas import workflow

    with deployed_stack() as stack:
        begun(stack)
        machine = stack.sfn.create_state_machine(
            name="waiting", definition=WAITING, roleArn="arn:aws:iam::123456789012:role/r"
        )["stateMachineArn"]
        run = stack.sfn.start_execution(stateMachineArn=machine, name="run")["executionArn"]
        stack.s3.delete_object(Bucket=BUCKET, Key=PREFIX + "event.json")
        runtime = Runtime(
            settings=Settings.from_env().model_copy(update={"bucket": BUCKET, "region": REGION})
        )
        handler = workflow.build(runtime, sfn=stack.sfn, run_machine=RUN_MACHINE)
        context = SimpleNamespace(
            function_name="evalrunner-workflow",
            function_version="$LATEST",
            invoked_function_arn="arn:aws:lambda:us-east-1:123456789012:function:w",
            memory_limit_in_mb=2048,
            aws_request_id="r-1",
            get_remaining_time_in_millis=lambda: 900_000,
        )
        task = {
            "action": "check",
            "workflow_id": "wf-a",
            "step": "evaluate",
            "execution": run,
            "wait_seconds": 7,
        }
        state = handler(task, context)
        stack.sfn.stop_execution(executionArn=run)
        assert state["status"] == "running" and state["execution"] == run
        assert state["wait_seconds"] == 7


def test_a_check_run_again_after_it_recorded_the_run_answers_done() -> None:
    """Lambda invocations are at-least-once: a check task retried after it recorded its run
    must answer done again, not fail the workflow with 'no run started'."""
    with deployed_stack() as stack:
        work = suite_begun(stack)
        pending_run(stack, work)
        manifest = stack.json(PREFIX + "workflow.json")
        manifest["steps"][1].update(status="done", finished_at="2026-01-01T00:01:00+00:00")
        stack.put(PREFIX + "workflow.json", json.dumps(manifest))
        state = work.check("wf-a", Step.EVALUATE, GONE, 1)
        assert state["status"] == "done"
        assert stack.json(PREFIX + "workflow.json") == manifest
