"""The deployed workflow's scratch folder and the runs it follows: a task that would copy
more into its ``/tmp`` than it holds is refused before copying, the step's recorded error
naming the size, the limit and what to do (the failure report still written); a step's
recorded run that this workflow did not start (a tampered ``workflow.json``) is refused,
not followed. The bucket and both state machines are moto's
(:mod:`tests.support.deployed_workflow`); the tasks are :class:`Deployed`'s own."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

import boto3
import pytest

from evalrunner.engine.embedded import BUCKET, REGION
from evalrunner.errors import EvalRunnerError
from evalrunner.judge.base import Judge
from evalrunner.storage import RunStore
from evalrunner.workflow import runner
from evalrunner.workflow.config import Step
from evalrunner.workflow.deployed import Deployed
from evalrunner.workflow.event import scratch
from tests.integration.test_workflow_event_attacks import PREFIX, WAITING, event, record
from tests.support.deployed_workflow import RUN_MACHINE, Stack, deployed_stack
from tests.support.workflow import DOCUMENTS

LIMIT = 64 * 1024


def deployed(stack: Stack, writer: Any = None, limit: int = LIMIT) -> Deployed:
    store = RunStore(BUCKET, client=boto3.client("s3", region_name=REGION))
    return Deployed(
        store=store, sfn=stack.sfn, run_machine=RUN_MACHINE, writer=writer, max_scratch_bytes=limit
    )


def begun(stack: Stack) -> None:
    for name, text in DOCUMENTS.items():
        stack.put(f"workflow-inputs/hr/docs/{name}", text)
    deployed(stack).begin(event())


def no_judge(raw: Mapping[str, Any]) -> Judge:
    raise AssertionError("a refused task must not reach the judge")


def test_a_workflow_too_big_for_the_scratch_folder_is_refused_before_copying() -> None:
    """An object dropped under workflows/<id>/ (or runs' report sets grown past what /tmp
    holds): the task sums the listed sizes first and refuses, copying nothing; the step's
    recorded error names the size, the limit, the biggest object and what to do; the
    failure branch's report (which copies only the manifest) is still written and says so."""
    with deployed_stack() as stack:
        begun(stack)
        stack.put(PREFIX + "dropped/big.bin", b"x" * (LIMIT + 1))
        with pytest.raises(EvalRunnerError) as refused:
            deployed(stack, no_judge).step("wf-a", Step.GENERATE)
        message = str(refused.value)
        assert re.search(r"would copy 6\d\.\d KiB into", message)
        assert "more than a task holds (64.0 KiB of the function's /tmp)" in message
        assert f"s3://{BUCKET}/{PREFIX}dropped/big.bin (64.0 KiB)" in message
        assert f"s3://{BUCKET}/{PREFIX}dropped/big.bin" in message
        assert "delete" in message
        assert not (scratch("wf-a") / "dropped").exists()  # nothing copied
        generate = record(stack, "generate")
        assert generate["status"] == "failed" and generate["error"] == message

        out = deployed(stack).report("wf-a", {"Error": "ConfigError", "Cause": "{}"})
        assert out["steps"]["generate"] == "failed" and out["verdict"] == "incomplete"
        assert "dropped/big.bin" in stack.get(PREFIX + "workflow-report.html").decode("utf-8")

        # the object removed, the same workflow_id goes on from there
        stack.s3.delete_object(Bucket=BUCKET, Key=PREFIX + "dropped/big.bin")
        _, ctx = deployed(stack)._open("wf-a")
        assert runner.due(ctx, Step.GENERATE) is not None


def test_the_inputs_count_toward_what_a_task_copies() -> None:
    """The event's suite is copied in too: one too big for the scratch folder is named."""
    with deployed_stack() as stack:
        stack.put("workflow-inputs/hr/suite.csv", b"id,question\n" + b"q,a\n" * LIMIT)
        deployed(stack, limit=LIMIT * 100).begin(
            event(documents=None, suite="workflow-inputs/hr/suite.csv")
        )
        with pytest.raises(EvalRunnerError, match=r"workflow-inputs/hr/suite\.csv"):
            deployed(stack).step("wf-a", Step.EVALUATE)
        assert record(stack, "evaluate")["status"] == "failed"
        assert stack.runs() == []


def test_the_same_workflow_under_the_limit_is_copied_and_runs() -> None:
    """The check is on what is copied, not a refusal of every workflow: under the limit the
    task copies the prefix and works as before."""
    with deployed_stack() as stack:
        begun(stack)
        stack.put(PREFIX + "dropped/small.bin", b"x" * 1024)
        _, ctx = deployed(stack)._open("wf-a")
        assert (ctx.folder / "dropped" / "small.bin").read_bytes() == b"x" * 1024


def tampered_run(stack: Stack, arn: str) -> None:
    """evaluate's record as if a run with these inputs was started: ``arn``, someone's."""
    work = deployed(stack, limit=2**30)
    _, ctx = work._open("wf-a")
    digest = runner.inputs_digest(ctx, Step.EVALUATE)
    manifest = json.loads(ctx.manifest.model_dump_json())
    manifest["steps"][1].update(
        started_at="2026-01-01T00:00:00+00:00", inputs_digest=digest, facts={"execution": arn}
    )
    stack.put(PREFIX + "workflow.json", json.dumps(manifest))


def suite_begun(stack: Stack) -> None:
    stack.put("workflow-inputs/hr/suite.csv", "id,question\nq1,How many days of leave?\n")
    deployed(stack).begin(event(documents=None, suite="workflow-inputs/hr/suite.csv"))


def test_a_recorded_run_of_another_state_machine_is_refused_not_followed() -> None:
    """Someone who can write workflows/ points evaluate's run at a running execution of
    another state machine: neither the step (resuming) nor the check follows it."""
    with deployed_stack() as stack:
        suite_begun(stack)
        machine = stack.sfn.create_state_machine(
            name="other", definition=WAITING, roleArn="arn:aws:iam::123456789012:role/r"
        )["stateMachineArn"]
        other = stack.sfn.start_execution(stateMachineArn=machine, name="wf-a-evaluate-0")[
            "executionArn"
        ]
        try:
            tampered_run(stack, other)
            with pytest.raises(EvalRunnerError, match="not a run this workflow started"):
                deployed(stack, limit=2**30).check("wf-a", Step.EVALUATE)
            evaluate = record(stack, "evaluate")
            assert evaluate["status"] == "failed" and other in evaluate["error"]
            assert "execution" not in evaluate["facts"]  # not followed on the next start

            tampered_run(stack, other)
            with pytest.raises(EvalRunnerError, match="not a run this workflow started"):
                deployed(stack, limit=2**30).step("wf-a", Step.EVALUATE)
            assert record(stack, "evaluate")["status"] == "failed"
            assert stack.runs() == []
        finally:
            stack.sfn.stop_execution(executionArn=other)


@pytest.mark.parametrize(
    "name",
    [
        "wf-b-evaluate-0123456789ab",  # another workflow's
        "wf-a-robustness-0123456789ab",  # another step's
        "wf-a-evaluate-evaluate-0123456789ab",  # workflow wf-a-evaluate's
        "nightly-run",  # a run someone started by hand
    ],
)
def test_a_recorded_run_of_the_runner_this_workflow_did_not_start_is_refused(name: str) -> None:
    """The run's name carries the workflow, the step and the 12 hex characters the step
    gave it: a run of the test runner named otherwise is not this step's."""
    arn = f"{RUN_MACHINE.replace(':stateMachine:', ':execution:')}:{name}"
    with deployed_stack() as stack:
        suite_begun(stack)
        tampered_run(stack, arn)
        with pytest.raises(EvalRunnerError, match="not a run this workflow started"):
            deployed(stack, limit=2**30).check("wf-a", Step.EVALUATE)
        assert arn in record(stack, "evaluate")["error"]


def test_begin_refuses_a_workflow_too_big_before_writing_anything() -> None:
    """A start over an existing workflow_id whose folder is already too big is refused at
    Begin, naming the size: nothing stored, no lock taken."""
    with deployed_stack() as stack:
        for name, text in DOCUMENTS.items():
            stack.put(f"workflow-inputs/hr/docs/{name}", text)
        stack.put(PREFIX + "dropped/big.bin", b"x" * (LIMIT + 1))
        with pytest.raises(EvalRunnerError, match=r"more than a task holds \(64\.0 KiB"):
            deployed(stack).begin(event(), "arn:aws:states:us-east-1:123456789012:execution:w:1")
        assert stack.keys(PREFIX) == [PREFIX + "dropped/big.bin"]


def test_a_check_of_a_workflow_too_big_is_refused_and_recorded_on_the_step() -> None:
    """The check that would copy the run's report in refuses the same way, and records it
    on the run step (the run it follows kept, so a start after the clean-up follows it)."""
    with deployed_stack() as stack:
        suite_begun(stack)
        arn = f"{RUN_MACHINE.replace(':stateMachine:', ':execution:')}:wf-a-evaluate-0123456789ab"
        tampered_run(stack, arn)
        stack.put(PREFIX + "evaluate/huge.json", b"x" * (LIMIT + 1))
        with pytest.raises(EvalRunnerError, match=r"evaluate/huge\.json"):
            deployed(stack).check("wf-a", Step.EVALUATE)
        evaluate = record(stack, "evaluate")
        assert evaluate["status"] == "failed" and "64.0 KiB" in evaluate["error"]
        assert evaluate["facts"] == {"execution": arn}
